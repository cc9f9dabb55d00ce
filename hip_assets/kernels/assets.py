"""Kernel assets: translation of every task, evolution of the correct ones, the verified archive. The agents
are the `llm` resource's choice (offline by default, Gemini per agent)."""

from statistics import geometric_mean

import dagster as dg
from pydantic import Field

from hip_assets.llm_calls import llm_metadata
from hip_assets.plot_metadata import plot_metadata
from hip_assets.run_links import run_metadata, table
from hipforge.agents.archive import KernelArchive
from hipforge.agents.recorder import ArchiveRecorder, StageSummary, accepted_tasks
from hipforge.agents.reuse import ReusingExecutor
from hipforge.agents.runner import StageRunner, StageTask
from hipforge.execution.protocol import protocol_key
from hipforge.execution.verdict import REVIEW_SPEEDUP
from hipforge.plots import speedup_bars
from hipforge.store import Warehouse
from hipforge.store.audit import latest_gate_audit
from hipforge.store.lessons import latest_lessons
from hipforge.store.tasks import task_names
from resources.executor import ExecutorResource
from resources.llm import LLMResource
from resources.warehouse import WarehouseResource

GROUP = "kernels"
TASK_ASSETS = ["reference_tasks", "kernelbench_tasks", "synthetic_tasks", "inbox_tasks"]
TASK_ORIGINS = ["reference", "synthetic", "kernelbench", "file"]  # "file": the inbox's


def _progress(context: dg.AssetExecutionContext):
    def report(done: int, total: int, what: str) -> None:
        context.log.info(f"{done}/{total}: {what}")

    return report


def _reasons(rows: list[tuple[str, str]]) -> dg.MetadataValue:
    return table([{"task": task, "reason": reason[:300]} for task, reason in rows], empty="none")


def _stage_metadata(context: dg.AssetExecutionContext, store: Warehouse, summary: StageSummary, title: str,
                    backend: str) -> dict[str, dg.MetadataValue]:
    metadata = {
        "evaluations": dg.MetadataValue.int(summary.evaluations),
        "verdicts": dg.MetadataValue.json(dict(summary.verdicts)),
        "correct": dg.MetadataValue.int(summary.verdicts.get("correct", 0)),
        "declined": dg.MetadataValue.int(len(summary.declined)),
        "declined_reasons": _reasons(summary.declined),
        "not_evaluated": dg.MetadataValue.int(len(summary.rejected)),
        "not_evaluated_reasons": _reasons(summary.rejected),
        "seconds": dg.MetadataValue.float(round(summary.seconds, 1)),
    }
    if summary.speedups:
        png = speedup_bars(list(summary.speedups), list(summary.speedups.values()), title, backend)
        metadata.update(plot_metadata(context, store, "speedups", png, title))
    return metadata


def reusing(executor: ExecutorResource, store: Warehouse, tasks: list[StageTask]) -> ReusingExecutor:
    """The executor, answering from the warehouse for what this protocol already judged (a killed run's work)."""
    task_ids = {t.eval_source(executor.backend): t.task_id for t in tasks}
    return ReusingExecutor(executor, store, task_ids, protocol_key(executor.eval_config()))


class TranslateConfig(dg.Config):
    origins: list[str] = Field(default=TASK_ORIGINS, description="task origins")
    limit: int = Field(default=0, description="at most this many tasks (0: all)")


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="gpu", deps=TASK_ASSETS)
def translated_kernels(context: dg.AssetExecutionContext, config: TranslateConfig, warehouse: WarehouseResource,
                       executor: ExecutorResource, llm: LLMResource) -> dg.MaterializeResult:
    """A first HIP kernel for every accepted task, verified by the executor: the offline translator, or an LLM
    re-prompted with the verifier's errors and the latest lessons (up to 5 attempts, the judge screening each)."""
    store, run_id = warehouse.get(), context.run.run_id
    tasks = accepted_tasks(store, config.origins, config.limit)
    verifier = reusing(executor, store, tasks)
    log = llm.call_log(store, run_id)
    agents = llm.agents(log, lessons=latest_lessons(store))
    context.log.info(f"translating {len(tasks)} tasks with {agents.translator.name}; "
                     f"evaluating on the {executor.backend} backend")
    recorder = ArchiveRecorder(KernelArchive(store), run_id, agents.judge.name)
    with log.batch():  # LLM calls land in llm_calls in batches, and whatever happened lands even on failure
        outcomes = StageRunner(verifier, recorder).translate(tasks, agents.translator, _progress(context))
    summary = recorder.finish(outcomes)
    metadata = {**_stage_metadata(context, store, summary, "translated kernels", executor.backend),
                "correct_rates": table(summary.rates_rows()),
                "correct_rate": dg.MetadataValue.float(round(summary.correct_rate(), 4)),
                "reused_evaluations": dg.MetadataValue.int(verifier.reused)}
    return dg.MaterializeResult(metadata={**metadata, **llm_metadata(llm, store, run_id), **run_metadata(context)})


class EvolveConfig(dg.Config):
    budget: int = Field(default=4, description="evaluations per task, the starting kernel included")
    children: int = Field(default=3, description="mutations of the current best per generation")
    seed: int = Field(default=0)
    limit: int = Field(default=6, description="evolve at most this many tasks (0: every task with a correct kernel)")
    origins: list[str] = Field(default=TASK_ORIGINS, description="task origins")


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="gpu", deps=[translated_kernels])
def evolved_kernels(context: dg.AssetExecutionContext, config: EvolveConfig, warehouse: WarehouseResource,
                    executor: ExecutorResource, llm: LLMResource) -> dg.MaterializeResult:
    """Offline: parametric evolution (block size, vector width, unroll, fast-math, tiles). LLM: ShinkaEvolve-style
    (parents by score and novelty, similar verified kernels, the best and recent failures shown, near-duplicates
    and implausible children rejected before the GPU). The fastest correct kernel wins."""
    store, run_id = warehouse.get(), context.run.run_id
    archive = KernelArchive(store)
    accepted = accepted_tasks(store, config.origins)
    starts = {t.task_id: start for t in accepted if (start := archive.best_start(t.task_id, executor.backend))}
    tasks = [t for t in accepted if t.task_id in starts]
    tasks = tasks[: config.limit] if config.limit > 0 else tasks
    verifier = reusing(executor, store, tasks)
    log = llm.call_log(store, run_id)
    agents = llm.agents(log, archive=archive, budget=config.budget, children=config.children, seed=config.seed)
    context.log.info(f"evolving {len(tasks)} tasks with {agents.evolver.name}, {config.budget} evaluations each")
    recorder = ArchiveRecorder(archive, run_id, agents.judge.name)
    with log.batch():
        outcomes = StageRunner(verifier, recorder).evolve(tasks, agents.evolver, starts, _progress(context))
    summary = recorder.finish(outcomes)
    metadata = {**_stage_metadata(context, store, summary, "evolved kernels", executor.backend),
                **llm_metadata(llm, store, run_id),
                "reused_evaluations": dg.MetadataValue.int(verifier.reused)}
    return dg.MaterializeResult(metadata={**metadata, **run_metadata(context)})


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb",
          deps=[translated_kernels, evolved_kernels, "verifier_audit"])
def kernel_archive(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    """The per-task best verified kernel over every agent and backend, fastest first, with the latest audit of the
    gate that verified it on each backend (how many attacks it caught, how many honest kernels it kept)."""
    store = warehouse.get()
    best = KernelArchive(store).per_task_best()
    names = task_names(store)
    for row in best:
        row["task"] = names.get(row["task_id"], row["task_id"])
    best.sort(key=lambda r: -(r["speedup_eager"] or 0.0))
    rows = [{"task": r["task"], "kernel": r["kernel_id"], "agent": r["agent"], "backend": r["backend"],
             "speedup": round(r["speedup_eager"] or 0.0, 3)} for r in best]
    review = [r for r in rows if r["speedup"] > REVIEW_SPEEDUP]  # more often a hack or a timing artifact
    metadata: dict[str, dg.MetadataValue] = {
        "tasks_with_a_verified_kernel": dg.MetadataValue.int(len(best)),
        "best": table(rows),
        "to_review": dg.MetadataValue.int(len(review)),
        "to_review_kernels": table(review, empty=f"none: no best kernel is over {REVIEW_SPEEDUP:g}x eager"),
        **run_metadata(context),
    }
    for backend in sorted({r["backend"] for r in best}):
        mine = [r for r in best if r["backend"] == backend and r["speedup_eager"]]
        metadata.update(_gate_audit(store, backend))
        if mine:
            metadata[f"geomean_speedup_{backend}"] = dg.MetadataValue.float(round(geometric_mean(
                [r["speedup_eager"] for r in mine]), 4))
            title = f"archive best ({backend})"
            png = speedup_bars([r["task"] for r in mine], [r["speedup_eager"] for r in mine], title, backend)
            metadata.update(plot_metadata(context, store, f"speedups_{backend}", png, title))
    return dg.MaterializeResult(metadata=metadata)


def _gate_audit(store: Warehouse, backend: str) -> dict[str, dg.MetadataValue]:
    """What the archive's verification on this backend is worth: the latest verifier_audit of its gate."""
    audit = latest_gate_audit(store, backend)
    if audit is None:
        return {f"gate_audit_{backend}": dg.MetadataValue.text(
            f"no audit of the gate on the {backend} backend yet: materialize verifier_audit")}
    return {f"gate_audit_{backend}": dg.MetadataValue.text(
                f"attacks caught {audit['caught']} / {audit['attacks']}, honest kept {audit['kept']} / "
                f"{audit['honest']} (audit run {audit['run_id']})"),
            f"gate_attacks_caught_{backend}": dg.MetadataValue.float(audit["caught"] / max(1, audit["attacks"]))}
