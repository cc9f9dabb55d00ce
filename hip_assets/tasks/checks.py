"""Checks of the task assets: our own library is clean, KernelBench rejections are reported, and no two
synthetic tasks are near-duplicates."""

import dagster as dg

from hip_assets.tasks.assets import kernelbench_tasks, reference_tasks
from hip_assets.tasks.synthetic import synthetic_tasks
from hipforge.store.tasks import accepted_sources, origin_verdicts
from hipforge.tasks.synth import DEFAULT_THRESHOLD, near_duplicate_pairs
from resources.warehouse import WarehouseResource


def _rejected_check(asset: dg.AssetsDefinition, origin: str, blocking: bool) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=asset, name=f"{origin}_tasks_accepted", blocking=blocking, pool="duckdb")
    def check(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        rejected, accepted = origin_verdicts(warehouse.get(), origin)
        return dg.AssetCheckResult(
            passed=not rejected,
            severity=dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN,
            metadata={"accepted": accepted, "rejected": len(rejected),
                      "rejections": dg.MetadataValue.json(dict(rejected))},
        )

    return check


# Our own library must be clean (a rejection is our bug); KernelBench rejections are reported, not fatal.
task_checks = [
    _rejected_check(reference_tasks, "reference", True),
    _rejected_check(kernelbench_tasks, "kernelbench", False),
]


@dg.asset_check(asset=synthetic_tasks, name="synthetic_tasks_distinct", blocking=True, pool="duckdb")
def synthetic_tasks_distinct(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """No two accepted synthetic tasks are near-duplicates, at the threshold the last materialization used."""
    event = context.instance.get_latest_materialization_event(synthetic_tasks.key)
    used = event.asset_materialization.metadata.get("near_duplicate_threshold") if event else None
    threshold = float(used.value) if used is not None else DEFAULT_THRESHOLD
    items = accepted_sources(warehouse.get(), ["synthetic"])
    pairs = near_duplicate_pairs(items, threshold)
    table = "\n".join(f"| {a} | {b} | {score:.3f} |" for a, b, score in pairs[:20])
    return dg.AssetCheckResult(
        passed=not pairs,
        metadata={
            "tasks": len(items),
            "threshold": threshold,
            "near_duplicate_pairs": len(pairs),
            "pairs": dg.MetadataValue.md(
                "| task | task | similarity |\n|---|---|---|\n" + table if pairs else "none"
            ),
        },
    )
