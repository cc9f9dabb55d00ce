"""Report runs of several models at once (the nightly schedule, the new-checkpoint sensor), requested so that
the report's asset page opens on the most meaningful one."""

import dagster as dg

from hip_assets.reports.assets import kernelbench_report
from hipforge.bench.report_store import opening_order
from resources.warehouse import WarehouseResource

# Dagster's run queue and pool slots serve higher priorities first, in order of creation within one priority
LAST = {"dagster/priority": "-1"}


def report_requests(models: list[str], warehouse: WarehouseResource, run_key: str,
                    tags: dict[str, str]) -> list[dg.RunRequest]:
    """One report run per model (run key: run_key + model), in opening order (report_store.opening_order): the
    asset page opens on the latest materialization, so the most meaningful report is requested last and queued
    behind the others at a lower priority."""
    ordered = opening_order(warehouse.get(), models)
    return [dg.RunRequest(run_key=f"{run_key}{model}", partition_key=model, asset_selection=[kernelbench_report.key],
                          tags={**tags, **(LAST if 0 < i == len(ordered) - 1 else {})})
            for i, model in enumerate(ordered)]
