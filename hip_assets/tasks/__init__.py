"""Tasks: the reference library, KernelBench, the inbox and synthetic tasks, with their checks."""

import dagster as dg

from hip_assets.tasks import assets, checks, synthetic

defs = dg.Definitions(
    assets=[assets.reference_tasks, assets.kernelbench_tasks, assets.inbox_tasks, synthetic.synthetic_tasks],
    asset_checks=[*checks.task_checks, checks.synthetic_tasks_distinct],
)
