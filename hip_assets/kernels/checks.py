"""Checks of the kernel assets."""

import dagster as dg

from hip_assets.kernels.assets import kernel_archive
from hipforge.agents.archive import KernelArchive
from resources.warehouse import WarehouseResource


@dg.asset_check(asset=kernel_archive, blocking=True)
def archive_best_kernels_are_verified(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """No kernel is anyone's best unless every evaluation of it on that backend said correct."""
    best = KernelArchive(warehouse.get()).per_task_best()
    bad = [r["kernel_id"] for r in best if r["verdict"] != "correct"]
    return dg.AssetCheckResult(passed=not bad, metadata={"best_kernels": len(best), "unverified": bad})
