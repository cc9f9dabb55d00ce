"""Launch a KernelBench report for every new trained checkpoint (a row in the warehouse's `checkpoints` table)."""

import json

import dagster as dg

from hip_assets.jobs import checkpoint_reports_job
from hip_assets.reports.assets import kernelbench_report, models_partitions
from hipforge.bench.models import checkpoint_key
from hipforge.store.checkpoints import checkpoint_ids
from resources.warehouse import WarehouseResource
from sensors.report_runs import report_requests


@dg.sensor(job=checkpoint_reports_job, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def new_checkpoints(context: dg.SensorEvaluationContext,
                    warehouse: WarehouseResource) -> dg.SensorResult | dg.SkipReason:
    """Adds a `checkpoint:<id>` model partition and requests its report; the cursor holds the ids seen."""
    store = warehouse.get()
    if not store.path.exists():
        return dg.SkipReason(f"no warehouse at {store.path} yet")
    ids = checkpoint_ids(store)
    if ids is None:
        return dg.SkipReason("the warehouse has no checkpoints table yet: no model has been trained")
    seen = set(json.loads(context.cursor)) if context.cursor else set()
    # a checkpoint whose report is already materialized (by the demo, or by hand) is seen, not redone: a
    # first tick after `make demo` would otherwise rerun its reports on every task
    reported = context.instance.get_materialized_partitions(kernelbench_report.key)
    fresh = [cid for cid in ids if cid not in seen and checkpoint_key(cid) not in reported]
    cursor = json.dumps(sorted(seen | set(ids)))
    if not fresh:
        return dg.SensorResult(skip_reason=f"no checkpoint without a report ({len(ids)} in the warehouse)",
                               cursor=cursor)
    keys = [checkpoint_key(cid) for cid in fresh]
    missing = [k for k in keys if not context.instance.has_dynamic_partition(models_partitions.name, k)]
    return dg.SensorResult(
        run_requests=report_requests(keys, warehouse, "report-", {}),  # the newest trained checkpoint last
        dynamic_partitions_requests=[models_partitions.build_add_request(missing)] if missing else [],
        cursor=cursor,
    )
