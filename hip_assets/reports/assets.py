"""KernelBench reports, one partition per model, and the nightly re-verification of the archive's best kernels."""

import os

import dagster as dg
from pydantic import Field

from hip_assets.plot_metadata import plot_metadata
from hip_assets.run_links import partition_link, run_metadata, table
from hipforge.bench.models import make_translator, resolve_model
from hipforge.bench.report import LOOSE, STRICT, load_report_tasks, run_report
from hipforge.bench.report_plots import compile_rate_bars, fast_p_curves, report_measured, roofline_images
from hipforge.bench.report_store import checkpoint_preset, kernel_lineage, meaningful_report, record_report
from hipforge.bench.report_tables import (
    checkpoint_note,
    comparison_markdown,
    measured_line,
    model_label,
    seed_markdown,
)
from hipforge.bench.reverify import reverify_best
from hipforge.execution.protocol import protocol_key
from hipforge.llm import CallLog, ResponseCache, default_cache_dir
from hipforge.paths import webserver_url
from hipforge.store.reports import latest_levels, previous_levels
from resources.executor import ExecutorResource
from resources.warehouse import WarehouseResource

GROUP = "reports"
models_partitions = dg.DynamicPartitionsDefinition(name="models")
REFERENCE_NOTE = ("No KernelBench source configured (set `HIPFORGE_KERNELBENCH` or the `source` config): this report "
                  "runs on hipforge's reference library, single operators as L1, fusions as L2, blocks as L3.")


class ReportConfig(dg.Config):
    source: str = Field(default_factory=lambda: os.environ.get("HIPFORGE_KERNELBENCH", ""),
                        description="KernelBench: level<N>/ folders, a .jsonl file or a dataset id; empty: the "
                                    "reference library")
    levels: list[int] = Field(default=[1, 2, 3])
    only: list[str] = Field(default=[], description="keep tasks whose name contains one of these (empty: all)")
    limit_per_level: int = Field(default=0, description="first N tasks of each level (0: all)")
    base_model: str = Field(default_factory=lambda: os.environ.get("HIPFORGE_BASE_MODEL", ""),
                            description="the 'baseline' model: a hub id or a local path")
    llm_base_url: str | None = Field(default=None, description="another endpoint for the Gemini API (a proxy)")
    attempts: int = Field(default=1, description="LLM models: attempts per task, each re-prompted with the verdict")
    max_output_tokens: int = Field(default=8192, description="LLM models: the longest answer per attempt")


def _run_link(run_id: str | None) -> str:
    return f"[{run_id[:8]}]({webserver_url()}/runs/{run_id})" if run_id else "-"


def _kernels_markdown(rows: list[dict], lineage: dict[str, dict]) -> str:
    """Per task: the model's kernel, its verdicts, and its lineage (task, parents, evaluations, checkpoints)."""
    lines = ["| task | L | kernel | verdict | 1e-4 | 1e-2 | speedup | task_id | parents | evaluations (run) | "
             "trained into |", "|---" * 11 + "|"]
    for r in rows:
        node = lineage.get(r["kernel_id"] or "", {})
        evals = ", ".join(f"{eid[:8]} {label} {_run_link(run)}" for eid, label, run in node.get("evaluations", []))
        speedup = f"{r['speedup_eager']:.3f}" if r["speedup_eager"] else "-"
        declined = (r["declined"] or "")[:80].replace("|", "/").replace("\n", " ")  # keep the table's cells
        lines.append(f"| {r['task_name']} | {r['level']} | {r['kernel_id'] or '-'} | "
                     f"{r['verdict'] or 'declined: ' + declined} | {r['correct_strict']:d} | "
                     f"{r['correct_loose']:d} | {speedup} | {r['task_id']} | {', '.join(node.get('parents', []))} | "
                     f"{evals} | {', '.join(node.get('checkpoints', [])) or '-'} |")
    return "\n".join(lines)


# a checkpoint:<id> partition's model is the row and weights these assets write
@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="gpu", partitions_def=models_partitions,
          deps=["sft_checkpoint", "rl_checkpoint"])
def kernelbench_report(context: dg.AssetExecutionContext, config: ReportConfig, warehouse: WarehouseResource,
                       executor: ExecutorResource) -> dg.MaterializeResult:
    """KernelBench scores of one model (offline agents, Gemini, the base model or a checkpoint) per level:
    compile and correct rates, fast_p, geomean speedup over eager and torch.compile, at fp32 1e-4 and 1e-2."""
    store, run_id, model = warehouse.get(), context.run.run_id, context.partition_key
    spec = resolve_model(model, store, config.base_model, config.llm_base_url)
    task_set, tasks = load_report_tasks(config.source, config.levels, config.limit_per_level, executor.backend,
                                        config.only)
    if task_set == "reference":
        context.log.info(REFERENCE_NOTE)
    context.log.info(f"{model}: {len(tasks)} {task_set} tasks on the {executor.backend} backend")
    log = CallLog(store, run_id, "report")

    def progress(done: int, total: int, what: str) -> None:
        context.log.info(f"{done}/{total} {what}")

    cache = ResponseCache(default_cache_dir(), "read_write")

    translator = make_translator(spec, attempts=config.attempts, base_url=config.llm_base_url, cache=cache, log=log,
                                 max_output_tokens=config.max_output_tokens)

    with log.batch():
        reporting = executor.model_copy(update={"fp32_tolerance": LOOSE})
        outcomes = run_report(tasks, translator, reporting, progress)
    previous = previous_levels(store, model, task_set, executor.backend, run_id, executor.arch)  # like with like
    rows, levels = record_report(store, run_id, spec, task_set, executor.backend, executor.arch, outcomes,
                                 protocol_key(reporting.eval_config()))
    # the plots set this report beside each model's latest on the same backend, device and task set only
    by_model = latest_levels(store, backend=executor.backend, arch=executor.arch, task_set=task_set)
    cfg = executor.eval_config()
    preset = checkpoint_preset(store, model)
    lineage = {n["kernel_id"]: n for n in kernel_lineage(store, [r["kernel_id"] for r in rows if r["kernel_id"]])}
    metadata = {
        "model": dg.MetadataValue.text(model), "task_set": dg.MetadataValue.text(task_set),
        "backend": dg.MetadataValue.text(f"{executor.backend} {executor.arch}"),
        "measured": dg.MetadataValue.text(measured_line(levels[0]) if levels else "no task ran"),
        "tasks": dg.MetadataValue.int(len(rows)),
        "levels": table([{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in levels]),
        "vs_seed": dg.MetadataValue.md(seed_markdown(levels, model_label(model, preset), executor.backend)),
        "vs_previous_report": dg.MetadataValue.md(comparison_markdown(previous, levels, executor.backend)),
        **plot_metadata(context, store, "compile_rates", compile_rate_bars(by_model, measured=report_measured(cfg)),
                        "compile rate per level"),
        **plot_metadata(context, store, "fast_p", fast_p_curves(by_model, measured=report_measured(cfg, speedups=True)),
                        "fast_p curves"),
        "kernels": dg.MetadataValue.md(_kernels_markdown(rows, lineage)),
        **{f"L{r['level']} compiled": dg.MetadataValue.float(r["compiled"])
           for r in levels if r["tolerance"] == STRICT},  # the same at either tolerance
        **{f"L{r['level']} correct @{r['tolerance']:g}": dg.MetadataValue.float(r["correct"]) for r in levels},
        **{f"L{r['level']} geomean_eager @{r['tolerance']:g}": dg.MetadataValue.float(r["geomean_eager"])
           for r in levels if r["geomean_eager"]},
        **run_metadata(context),
    }
    for level, png in roofline_images(outcomes, cfg).items():
        metadata.update(plot_metadata(context, store, f"roofline L{level}", png, f"roofline, level {level}"))
    notes = [n for n in (checkpoint_note(model, preset), REFERENCE_NOTE if task_set == "reference" else None) if n]
    if notes:
        metadata["note"] = dg.MetadataValue.md("\n\n".join(notes))
    # an embedded checkpoint's zeros may be the latest materialization, the one the asset page opens on
    instead = meaningful_report(store, context.instance.get_dynamic_partitions(models_partitions.name), model)
    if instead:
        metadata["meaningful_report"] = partition_link("kernelbench_report", instead)
    strict = [r for r in levels if r["tolerance"] == STRICT]
    context.log.info(f"{model}: correct at 1e-4 per level " + ", ".join(f"L{r['level']} {r['correct']:.2f}"
                                                                       for r in strict))
    return dg.MaterializeResult(metadata=metadata)


class ReverifyConfig(dg.Config):
    limit: int = Field(default=0, description="re-verify at most this many best kernels (0: all)")


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="gpu", deps=["kernel_archive"])
def archive_reverification(context: dg.AssetExecutionContext, config: ReverifyConfig, warehouse: WarehouseResource,
                           executor: ExecutorResource) -> dg.MaterializeResult:
    """Each task's best kernel evaluated again on the current executor and toolchain; changed verdicts flagged."""
    rows, skipped = reverify_best(warehouse.get(), executor, context.run.run_id, config.limit)
    changed = [r for r in rows if r["changed"]]
    for r in changed:
        context.log.warning(f"kernel {r['kernel_id']} (task {r['task_id']}) was {r['previous_verdict']}, "
                            f"now {r['verdict']}")
    rows = [{"kernel": r["kernel_id"], "task": r["task_id"], "was": r["previous_verdict"], "now": r["verdict"],
             "evaluation": r["eval_id"]} for r in changed]
    return dg.MaterializeResult(metadata={
        "reverified": dg.MetadataValue.int(len(rows)),
        "verdict_changed": dg.MetadataValue.int(len(changed)),
        "without_stored_task": dg.MetadataValue.int(skipped),
        "changed": table(rows, empty="no verdict changed"),
        **run_metadata(context),
    })
