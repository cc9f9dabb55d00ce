"""The hipforge code location: every asset, check, resource, schedule and sensor."""

import os

import dagster as dg

from hip_assets import audit, kernels, lessons, report, synthetic, tasks, training
from hip_assets.jobs import checkpoint_reports_job, demo_job, inbox_job, nightly_reevaluation_job
from resources.executor import ExecutorResource
from resources.llm import LLMResource
from resources.warehouse import WarehouseResource
from sensors.checkpoints import new_checkpoints
from sensors.new_tasks import new_task_files
from sensors.nightly import nightly_reevaluation

defs = dg.Definitions(
    assets=[
        tasks.reference_tasks, tasks.kernelbench_tasks, tasks.inbox_tasks, synthetic.synthetic_tasks,
        kernels.translated_kernels, kernels.evolved_kernels, kernels.kernel_archive, audit.verifier_audit,
        report.kernelbench_report, report.archive_reverification, lessons.lessons,
        training.sft_records, training.rl_records, training.base_model, training.sft_checkpoint,
        training.rl_checkpoint,
    ],
    asset_checks=[
        *tasks.task_checks, synthetic.synthetic_tasks_distinct, kernels.archive_best_kernels_are_verified,
        audit.gate_rejects_deceptive,
    ],
    jobs=[demo_job, nightly_reevaluation_job, checkpoint_reports_job, inbox_job],
    sensors=[new_task_files, new_checkpoints],
    schedules=[nightly_reevaluation],
    resources={
        "warehouse": WarehouseResource(),
        "executor": ExecutorResource(backend=os.environ.get("HIPFORGE_BACKEND", "cpu"),
                                     pool=os.environ.get("HIPFORGE_POOL", "local"),
                                     ray_address=os.environ.get("HIPFORGE_RAY_ADDRESS", "")),
        "llm": LLMResource(),  # every agent offline unless the launchpad (or run config) says otherwise
    },
)
