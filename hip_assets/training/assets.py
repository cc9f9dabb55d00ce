"""Training assets: SFT and RL records from the archive, the base model, an SFT checkpoint, then GRPO (TRLOO,
multi-turn retries, reward smoothing, lessons in the prompts) with rewards from the executor."""

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from hip_assets.plot_metadata import plot_metadata
from hip_assets.run_links import run_metadata
from hipforge.execution.verdict import Verdict
from hipforge.plots import device_name, measured_on
from hipforge.store import Warehouse
from hipforge.store.checkpoints import latest_checkpoint
from hipforge.store.records import latest_snapshot, snapshot_record_ids
from hipforge.train import base_model as models
from hipforge.train import checkpoints, records, store
from hipforge.train.config import preset
from hipforge.train.reward import RewardRule
from hipforge.train.scoring import CandidateScorer
from resources.executor import ExecutorResource
from resources.warehouse import WarehouseResource

GROUP = "training"
SYSTEM_BY_PRESET = {"embedded": "brief", "seed": "full"}  # the tiny model trains on short sequences


class RecordsConfig(dg.Config):
    preset: str = Field(default="embedded", description="embedded (brief system prompt, for the tiny model) | seed")
    limit: int = Field(default=0, description="RL prompts from at most this many tasks (0: every accepted task)")


class BaseModelConfig(dg.Config):
    name_or_path: str = Field(default=models.EMBEDDED, description=f"hub id or local path, e.g. {models.PRODUCTION}; "
                              f"{models.EMBEDDED} builds a tiny Qwen2 with a tokenizer trained on our corpus")
    vocab_size: int = Field(default=2048, description="embedded only: BPE vocabulary size")


class SFTRunConfig(dg.Config):
    preset: str = Field(default="embedded", description="embedded (tiny model, seconds on CPU) | seed (3 epochs, "
                        "batch 2, lr 2e-5)")
    max_steps: int | None = Field(default=None, description="overrides the preset (> 0 beats epochs)")
    epochs: float | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    max_length: int | None = None
    lora_rank: int | None = Field(default=None, description="> 0: LoRA of that rank (needs peft)")


class GRPORunConfig(dg.Config):
    preset: str = Field(default="embedded", description="embedded | seed (4 generations, 3 retries, 100-reward "
                        "window at 1.5 sigma, 3x cap)")
    max_steps: int | None = None
    learning_rate: float | None = None
    num_generations: int | None = None
    max_retries: int | None = None
    max_new_tokens: int | None = None
    coverage_weight: float | None = Field(default=None, description="weight of the profiler's coverage term")
    lora_rank: int | None = None


def _overrides(config: dg.Config) -> dict[str, Any]:
    return {k: v for k, v in config.model_dump().items() if k != "preset"}


def _dirs(warehouse: Warehouse) -> tuple[Path, Path]:
    """Exports and checkpoints live beside the warehouse file (git-ignored under warehouse/)."""
    return warehouse.path.parent / "exports", warehouse.path.parent / "checkpoints"


def _reporter(context: dg.AssetExecutionContext, what: str) -> Callable[[int, int, dict[str, float]], None]:
    def report(step: int, max_steps: int, logs: dict[str, float]) -> None:
        shown = {k: round(v, 4) for k, v in logs.items() if k in ("loss", "reward", "grad_norm")}
        context.log.info(f"{what} step {step}/{max_steps} {shown}")

    return report


def _store_records(context: dg.AssetExecutionContext, warehouse: Warehouse, rows: list[records.Record],
                   kind: str) -> dg.MaterializeResult:
    snapshot = records.snapshot_id(rows)
    paths = records.export(rows, _dirs(warehouse)[0] / kind / snapshot, kind)
    store.store_records(warehouse, rows, snapshot, paths["jsonl"], context.run.run_id)
    context.log.info(f"{len(rows)} {kind} records, snapshot {snapshot}, exported to {paths['parquet']}")
    preview = rows[0].prompt[-1]["content"][:600]
    return dg.MaterializeResult(metadata={
        "records": dg.MetadataValue.int(len(rows)), "snapshot": dg.MetadataValue.text(snapshot),
        "parquet": dg.MetadataValue.path(paths["parquet"]), "jsonl": dg.MetadataValue.path(paths["jsonl"]),
        "first_prompt": dg.MetadataValue.md(f"```\n{preview}\n```"), **run_metadata(context)})


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb", deps=["kernel_archive"])
def sft_records(context: dg.AssetExecutionContext, config: RecordsConfig,
                warehouse: WarehouseResource) -> dg.MaterializeResult:
    """One chat record per task with a verified kernel: system + task prompt -> its fastest trusted kernel."""
    rows = store.sft_records_from_archive(warehouse.get(), SYSTEM_BY_PRESET[_checked(config.preset)])
    return _store_records(context, warehouse.get(), rows, "sft")


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb", deps=["kernel_archive"])
def rl_records(context: dg.AssetExecutionContext, config: RecordsConfig, warehouse: WarehouseResource,
               executor: ExecutorResource) -> dg.MaterializeResult:
    """One RL prompt per accepted task, with the summarizer's lessons from every failure in the archive."""
    lessons = store.current_lessons(warehouse.get())
    context.log.info(f"lessons in the RL prompts: {lessons.count(chr(10))} ({len(lessons)} characters)")
    rows = store.rl_records_from_tasks(warehouse.get(), executor.backend, lessons,
                                       SYSTEM_BY_PRESET[_checked(config.preset)], config.limit)
    result = _store_records(context, warehouse.get(), rows, "rl")
    return dg.MaterializeResult(metadata={**result.metadata, "lessons": dg.MetadataValue.md(lessons or "none")})


@dg.asset(group_name=GROUP, kinds={"python", "pytorch"}, pool="duckdb", deps=[sft_records, rl_records])
def base_model(context: dg.AssetExecutionContext, config: BaseModelConfig,
               warehouse: WarehouseResource) -> dg.MaterializeResult:
    """The model training starts from: a hub id or path, or a tiny Qwen2 built here from config."""
    if config.name_or_path != models.EMBEDDED:
        local = Path(config.name_or_path)
        if config.name_or_path.startswith((".", "/")) and not local.exists():
            raise FileNotFoundError(f"base model path {local} does not exist")
        return dg.MaterializeResult(metadata={"model_path": dg.MetadataValue.text(config.name_or_path),
                                              **run_metadata(context)})
    corpus, spec = store.tokenizer_corpus(warehouse.get()), models.TinyQwen2(vocab_size=config.vocab_size)
    out = _dirs(warehouse.get())[1] / f"base-{models.corpus_id(corpus, spec)}"
    context.log.info(f"training a byte-level BPE tokenizer on {len(corpus)} texts and building the tiny Qwen2")
    summary = models.build_tiny(corpus, out, spec)
    return dg.MaterializeResult(metadata={"model_path": dg.MetadataValue.path(str(out)),
                                          "summary": dg.MetadataValue.json(summary), **run_metadata(context)})


def _checked(name: str) -> str:
    if name not in SYSTEM_BY_PRESET:
        raise ValueError(f"unknown preset {name!r}: choose one of {sorted(SYSTEM_BY_PRESET)}")
    return name


def _base_path(context: dg.AssetExecutionContext) -> str:
    event = context.instance.get_latest_materialization_event(dg.AssetKey("base_model"))
    if event is None or event.asset_materialization is None:
        raise LookupError("no base_model materialization: materialize base_model first")
    return str(event.asset_materialization.metadata["model_path"].value)


def headline_numbers(metrics: dict[str, Any], curves: dict[str, Any]) -> dict[str, dg.MetadataValue]:
    """The run's numbers as numeric metadata, which Dagster plots over materializations: every scalar metric,
    and each curve's last value (final_loss, final_reward)."""
    numbers: dict[str, dg.MetadataValue] = {
        k: dg.MetadataValue.int(v) if isinstance(v, int) else dg.MetadataValue.float(float(v))
        for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    numbers.update({f"final_{name}": dg.MetadataValue.float(float(points[-1][1]))
                    for name, points in curves.items() if points})
    return numbers


def _finish(context: dg.AssetExecutionContext, warehouse: Warehouse, stage: str, base: str, kind: str, out: Path,
            metrics: dict[str, Any], curves: dict[str, Any], preset_name: str,
            measured: str = "") -> dg.MaterializeResult:
    snapshot, _ = latest_snapshot(warehouse, kind)
    # the preset goes with them: a report of an embedded checkpoint says its scores are the embedded preset's
    hyper = {"preset": preset_name, **metrics.pop("hyperparameters")}
    row = {"checkpoint_id": out.name, "stage": stage, "base_model": base, "path": str(out),
           "data_snapshot": snapshot, "hyperparameters": hyper, "metrics": metrics}
    checkpoints.write_metadata(out, {**row, "run_id": context.run.run_id})
    store.store_checkpoint(warehouse, row, snapshot_record_ids(warehouse, snapshot), context.run.run_id)
    metadata: dict[str, Any] = {"checkpoint_id": dg.MetadataValue.text(out.name), "path": dg.MetadataValue.path(
        str(out)), "base_model": dg.MetadataValue.text(base), "data_snapshot": dg.MetadataValue.text(snapshot),
        "hyperparameters": dg.MetadataValue.json(hyper),
        "metrics": dg.MetadataValue.json({k: v for k, v in metrics.items() if not isinstance(v, list)}),
        **headline_numbers(metrics, curves)}
    png = checkpoints.curve_plot(curves, f"{stage}: {out.name}" + (f"\n{measured}" if measured else ""))
    # the curves travel with the checkpoint: its own folder, named by run, holds them (curves.png)
    metadata.update(plot_metadata(context, warehouse, "curves", png, f"{stage} curves", folder=out))
    return dg.MaterializeResult(metadata={**metadata, **run_metadata(context)})


@dg.asset(group_name=GROUP, kinds={"python", "pytorch", "duckdb"}, pool="duckdb", deps=[base_model, sft_records])
def sft_checkpoint(context: dg.AssetExecutionContext, config: SFTRunConfig,
                   warehouse: WarehouseResource) -> dg.MaterializeResult:
    """TRL SFTTrainer on the SFT records, loss on the kernel (completion) only."""
    from hipforge.train.sft import train_sft

    hyper = preset(config.preset, "sft", _overrides(config))
    base, store_ = _base_path(context), warehouse.get()
    snapshot, export_path = latest_snapshot(store_, "sft")
    out = _dirs(store_)[1] / checkpoints.checkpoint_id("sft", base, snapshot, vars(hyper), context.run.run_id)
    metrics = train_sft(base, records.load_jsonl(Path(export_path)), out, hyper, _reporter(context, "sft"))
    return _finish(context, store_, "sft", base, "sft", out, metrics, {"loss": metrics["loss"]}, config.preset)


@dg.asset(group_name=GROUP, kinds={"python", "pytorch", "duckdb"}, pool="gpu", deps=[sft_checkpoint, rl_records])
def rl_checkpoint(context: dg.AssetExecutionContext, config: GRPORunConfig, warehouse: WarehouseResource,
                  executor: ExecutorResource) -> dg.MaterializeResult:
    """GRPO from the SFT checkpoint: 4 candidates per prompt, rewards from the executor, every candidate archived."""
    from hipforge.train.grpo import train_grpo

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL; we know
    hyper = preset(config.preset, "grpo", _overrides(config))
    store_ = warehouse.get()
    base = latest_checkpoint(store_, "sft")["path"]
    snapshot, export_path = latest_snapshot(store_, "rl")
    out = _dirs(store_)[1] / checkpoints.checkpoint_id("rl", base, snapshot, vars(hyper), context.run.run_id)
    rule = RewardRule(cap=hyper.reward_cap, correct_bonus=hyper.correct_bonus, coverage_weight=hyper.coverage_weight)
    recorder = store.ArchiveRecorder(store_, context.run.run_id, model=out.name)
    scorer = CandidateScorer(executor.eval_config(), rule, hyper.eval_parallel, recorder,
                             pool=executor.shared_pool())
    metrics = train_grpo(base, records.load_jsonl(Path(export_path)), out, hyper, scorer,
                         _reporter(context, "grpo"))
    correct = sum(s["correct"] for s in metrics["per_step"])
    context.log.info(f"{metrics['evaluations']} candidates scored ({correct} {Verdict.CORRECT.value}), "
                     f"{metrics['rollouts_per_min']} rollouts/min")
    # the rewards are speedups measured on the executor's backend: the plot says which, and what cpu ones mean
    measured = measured_on(executor.backend, device_name(executor.backend, executor.arch),
                           f"rewards: speedup over eager capped at {hyper.reward_cap:g}x", speedups=True)
    return _finish(context, store_, "rl", base, "rl", out, metrics, {"loss": metrics["loss"],
                                                                     "reward": metrics["reward"]}, config.preset,
                   measured)
