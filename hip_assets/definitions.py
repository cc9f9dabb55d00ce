"""The hipforge code location: each domain's assets and checks, merged with the jobs, automations and resources."""

import os

import dagster as dg

from hip_assets import audit, kernels, lessons, reports, tasks, training
from hip_assets.jobs import checkpoint_reports_job, demo_job, inbox_job, nightly_reevaluation_job
from resources.executor import ExecutorResource
from resources.llm import LLMResource
from resources.warehouse import WarehouseResource
from sensors.checkpoints import new_checkpoints
from sensors.new_tasks import new_task_files
from sensors.nightly import nightly_reevaluation
from sensors.pool_waits import pool_waits

defs = dg.Definitions.merge(
    tasks.defs, kernels.defs, audit.defs, reports.defs, training.defs, lessons.defs,
    dg.Definitions(  # the automations and the resources every domain shares
        jobs=[demo_job, nightly_reevaluation_job, checkpoint_reports_job, inbox_job],
        sensors=[new_task_files, new_checkpoints, pool_waits],  # pool_waits launches nothing: it tells
        schedules=[nightly_reevaluation],
        resources={
            "warehouse": WarehouseResource(),
            "executor": ExecutorResource(backend=os.environ.get("HIPFORGE_BACKEND", "cpu"),
                                         pool=os.environ.get("HIPFORGE_POOL", "local"),
                                         ray_address=os.environ.get("HIPFORGE_RAY_ADDRESS", "")),
            "llm": LLMResource(),  # every agent offline unless the launchpad (or run config) says otherwise
        },
    )
)
