"""Task assets: the project's reference library and KernelBench, smoke-checked into the warehouse."""

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from hip_assets.run_links import run_metadata, table
from hipforge.bench.kernelbench import load_kernelbench
from hipforge.paths import default_inbox
from hipforge.tasks.inbox import inbox_candidates, scan_inbox
from hipforge.tasks.ingest import IngestSummary, TaskCandidate, ingest_tasks
from hipforge.tasks.library import load_library
from resources.warehouse import WarehouseResource

GROUP = "tasks"


def _ingest(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, candidates: list[TaskCandidate], workers: int
) -> dg.MaterializeResult:
    def progress(done: int, total: int, name: str) -> None:
        if done == total or done % 10 == 0:
            context.log.info(f"smoke-checked {done}/{total} tasks (last: {name})")

    summary = ingest_tasks(candidates, warehouse.get(), context.run.run_id, workers, progress)
    for name, reason in summary.rejections:
        context.log.warning(f"rejected {name}: {reason}")
    return dg.MaterializeResult(metadata={**_summary_metadata(summary), **run_metadata(context)})


def _summary_metadata(summary: IngestSummary) -> dict[str, dg.MetadataValue]:
    rejections = [{"task": name, "reason": reason[:300]} for name, reason in summary.rejections]
    return {
        "tasks": dg.MetadataValue.int(summary.total),
        "accepted": dg.MetadataValue.int(summary.accepted),
        "rejected": dg.MetadataValue.int(summary.rejected),
        "new_rows": dg.MetadataValue.int(summary.new_rows),
        "composed_of_edges": dg.MetadataValue.int(summary.edges),
        "seconds": dg.MetadataValue.float(round(summary.seconds, 1)),
        "reject_codes": dg.MetadataValue.json(dict(summary.reject_codes)),
        "rejections": table(rejections, empty="none"),
    }


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb")
def reference_tasks(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    """hipforge's own library of PyTorch reference tasks (KernelBench format), smoke-checked on CPU."""
    candidates = [
        TaskCandidate(t.name, t.source, "reference", category=t.category, composed_of=t.composed_of)
        for t in load_library()
    ]
    return _ingest(context, warehouse, candidates, workers=2)


class KernelBenchConfig(dg.Config):
    source: str = Field(
        default_factory=lambda: os.environ.get("HIPFORGE_KERNELBENCH", ""),
        description="A directory of level<N>/ problem files, a .jsonl file, or a dataset id "
        "(e.g. ScalingIntelligence/KernelBench, needs network). Empty: none configured.",
    )
    levels: list[int] = Field(default=[1, 2, 3], description="KernelBench levels to load")
    limit_per_level: int = Field(default=0, description="keep only the first N problems of each level (0: all)")
    workers: int = Field(default=2, description="parallel smoke-check workers")


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb")
def kernelbench_tasks(
    context: dg.AssetExecutionContext, config: KernelBenchConfig, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """KernelBench problems loaded from the configured path or dataset id, smoke-checked on CPU."""
    if not config.source:
        context.log.info("no KernelBench source configured; reports fall back to the reference library")
        return dg.MaterializeResult(
            metadata={
                "source": dg.MetadataValue.text("none configured"),
                "note": dg.MetadataValue.md(
                    "No KernelBench source configured (set `HIPFORGE_KERNELBENCH` or the `source` config). "
                    "Reports fall back to the reference library."
                ),
                "tasks": dg.MetadataValue.int(0),
                **run_metadata(context),
            }
        )
    problems = load_kernelbench(config.source, config.levels, config.limit_per_level)
    context.log.info(f"loaded {len(problems)} KernelBench problems from {config.source}")
    candidates = [
        TaskCandidate(p.task_name, p.source, "kernelbench", category=f"level{p.level}", level=p.level,
                      problem_id=p.problem_id)
        for p in problems
    ]
    result = _ingest(context, warehouse, candidates, config.workers)
    return dg.MaterializeResult(metadata={**result.metadata, "source": dg.MetadataValue.text(config.source)})


class InboxConfig(dg.Config):
    folder: str = Field(default_factory=lambda: str(default_inbox()), description="folder of task files (*.py)")
    files: list[str] = Field(default=[], description="file names to ingest (empty: every *.py file in the folder)")


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb")
def inbox_tasks(
    context: dg.AssetExecutionContext, config: InboxConfig, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """Task files users dropped into the inbox folder (the new-tasks sensor launches this), smoke-checked."""
    folder = Path(config.folder)
    names = config.files or list(scan_inbox(folder))
    candidates = inbox_candidates(folder, names)
    context.log.info(f"ingesting {len(candidates)} task files from {folder}")
    result = _ingest(context, warehouse, candidates, workers=2)
    return dg.MaterializeResult(metadata={**result.metadata, "folder": dg.MetadataValue.path(str(folder))})
