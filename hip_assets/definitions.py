"""The hipforge code location: every asset, check, resource, schedule and sensor."""

import dagster as dg

from hip_assets import tasks
from resources.warehouse import WarehouseResource

defs = dg.Definitions(
    assets=[tasks.reference_tasks, tasks.kernelbench_tasks],
    asset_checks=tasks.task_checks,
    resources={"warehouse": WarehouseResource()},
)
