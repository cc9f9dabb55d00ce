"""The hipforge code location: every asset, check, resource, schedule and sensor."""

import os

import dagster as dg

from hip_assets import audit, kernels, synthetic, tasks
from resources.executor import ExecutorResource
from resources.warehouse import WarehouseResource
from sensors.new_tasks import new_task_files

defs = dg.Definitions(
    assets=[
        tasks.reference_tasks, tasks.kernelbench_tasks, tasks.inbox_tasks, synthetic.synthetic_tasks,
        kernels.translated_kernels, kernels.evolved_kernels, kernels.kernel_archive, audit.verifier_audit,
    ],
    asset_checks=[
        *tasks.task_checks, synthetic.synthetic_tasks_distinct, kernels.archive_best_kernels_are_verified,
        audit.gate_rejects_deceptive,
    ],
    sensors=[new_task_files],
    resources={
        "warehouse": WarehouseResource(),
        "executor": ExecutorResource(backend=os.environ.get("HIPFORGE_BACKEND", "cpu")),
    },
)
