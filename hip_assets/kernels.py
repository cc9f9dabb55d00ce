"""Kernel assets: offline translation of every task, evolution of the correct ones, the verified archive."""

import dagster as dg
from pydantic import Field

from hip_assets.run_links import run_metadata
from hipforge.agents.archive import KernelArchive
from hipforge.agents.evolve import offline_generate
from hipforge.agents.pipeline import (
    StageSummary,
    accepted_tasks,
    evolve_tasks,
    task_names,
    translate_tasks,
)
from hipforge.agents.translate.translator import OfflineTranslator
from hipforge.bench.plots import markdown_image, speedup_bars
from resources.executor import ExecutorResource
from resources.warehouse import WarehouseResource

GROUP = "kernels"
TASK_ASSETS = ["reference_tasks", "kernelbench_tasks", "synthetic_tasks"]


def _progress(context: dg.AssetExecutionContext, verb: str):
    def report(done: int, total: int, name: str) -> None:
        context.log.info(f"{verb} {done}/{total} (last: {name})")

    return report


def _stage_metadata(summary: StageSummary, title: str) -> dict[str, dg.MetadataValue]:
    declined = "\n".join(f"| {task} | {reason[:150]} |" for task, reason in summary.declined)
    metadata = {
        "evaluations": dg.MetadataValue.int(summary.evaluations),
        "verdicts": dg.MetadataValue.json(dict(summary.verdicts)),
        "correct": dg.MetadataValue.int(summary.verdicts.get("correct", 0)),
        "declined": dg.MetadataValue.int(len(summary.declined)),
        "declined_reasons": dg.MetadataValue.md("| task | reason |\n|---|---|\n" + declined if declined else "none"),
        "seconds": dg.MetadataValue.float(round(summary.seconds, 1)),
    }
    if summary.speedups:
        labels = sorted(summary.speedups, key=summary.speedups.get, reverse=True)
        png = speedup_bars(labels, [summary.speedups[n] for n in labels], title)
        metadata["speedups"] = dg.MetadataValue.md(markdown_image(png, title))
    return metadata


class TranslateConfig(dg.Config):
    origins: list[str] = Field(default=["reference", "synthetic", "kernelbench"], description="task origins")
    limit: int = Field(default=0, description="at most this many tasks (0: all)")


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="gpu", deps=TASK_ASSETS)
def translated_kernels(context: dg.AssetExecutionContext, config: TranslateConfig, warehouse: WarehouseResource,
                       executor: ExecutorResource) -> dg.MaterializeResult:
    """A first HIP kernel for every accepted task from the offline translator, verified by the executor."""
    store = warehouse.get()
    tasks = accepted_tasks(store, config.origins, config.limit)
    context.log.info(f"translating {len(tasks)} tasks; evaluating on the {executor.backend} backend")
    summary = translate_tasks(tasks, OfflineTranslator(), executor, KernelArchive(store), context.run.run_id,
                              _progress(context, "evaluated"))
    rates = dg.MetadataValue.md(summary.rates_table())
    metadata = {**_stage_metadata(summary, "translated kernels"), "correct_rates": rates}
    return dg.MaterializeResult(metadata={**metadata, **run_metadata(context)})


class EvolveConfig(dg.Config):
    budget: int = Field(default=4, description="evaluations per task, the starting kernel included")
    children: int = Field(default=3, description="mutations of the current best per generation")
    seed: int = Field(default=0)
    limit: int = Field(default=6, description="evolve at most this many tasks (0: every task with a correct kernel)")
    origins: list[str] = Field(default=["reference", "synthetic", "kernelbench"])


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="gpu", deps=[translated_kernels])
def evolved_kernels(context: dg.AssetExecutionContext, config: EvolveConfig, warehouse: WarehouseResource,
                    executor: ExecutorResource) -> dg.MaterializeResult:
    """Parametric evolution (block size, vector width, unroll, fast-math, tiles): the fastest correct kernel wins."""
    store = warehouse.get()
    archive = KernelArchive(store)
    tasks = [t for t in accepted_tasks(store, config.origins) if archive.best(t.task_id, executor.backend)]
    tasks = tasks[: config.limit] if config.limit > 0 else tasks
    context.log.info(f"evolving {len(tasks)} tasks, {config.budget} evaluations each")
    summary = evolve_tasks(tasks, offline_generate, executor, archive, context.run.run_id, budget=config.budget,
                           children=config.children, seed=config.seed, workers=executor.workers,
                           on_progress=_progress(context, "evolved"))
    return dg.MaterializeResult(metadata={**_stage_metadata(summary, "evolved kernels"), **run_metadata(context)})


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb", deps=[translated_kernels, evolved_kernels])
def kernel_archive(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    """The per-task best verified kernel over every agent and backend, with its speedup."""
    best = KernelArchive(warehouse.get()).per_task_best()
    names = task_names(warehouse.get())
    for row in best:
        row["task"] = names.get(row["task_id"], row["task_id"])
    rows = "\n".join(f"| {r['task']} | {r['kernel_id']} | {r['agent']} | {r['backend']} | "
                     f"{(r['speedup_eager'] or 0):.3f} |" for r in best)
    metadata = {
        "tasks_with_a_verified_kernel": dg.MetadataValue.int(len(best)),
        "best": dg.MetadataValue.md("| task | kernel | agent | backend | speedup |\n|---|---|---|---|---|\n" + rows),
        **run_metadata(context),
    }
    speedups = [r for r in best if r["speedup_eager"]]
    if speedups:
        png = speedup_bars([r["task"] for r in speedups], [r["speedup_eager"] for r in speedups], "archive best")
        metadata["speedups"] = dg.MetadataValue.md(markdown_image(png, "archive best"))
    return dg.MaterializeResult(metadata=metadata)


@dg.asset_check(asset=kernel_archive, blocking=True)
def archive_best_kernels_are_verified(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """No kernel is anyone's best unless every evaluation of it on that backend said correct."""
    best = KernelArchive(warehouse.get()).per_task_best()
    bad = [r["kernel_id"] for r in best if r["verdict"] != "correct"]
    return dg.AssetCheckResult(passed=not bad, metadata={"best_kernels": len(best), "unverified": bad})
