"""Task model: a PyTorch reference in KernelBench format, its static checks, smoke scale and sandboxed run.

Importing this package does not import torch; only the sandbox worker processes do.
"""

from hipforge.tasks.errors import ERROR_CODES, ErrorCode, TaskError
from hipforge.tasks.reference_run import ReferenceRun, check_task, check_tasks, shutdown_workers, smoke_sources
from hipforge.tasks.smoke import LADDER, SmokeRung, SmokeSource, smoke_ladder, smoke_scale
from hipforge.tasks.source import check_source, normalize_source, parse_source, size_constants, task_id

__all__ = [
    "ERROR_CODES",
    "LADDER",
    "ErrorCode",
    "ReferenceRun",
    "SmokeRung",
    "SmokeSource",
    "TaskError",
    "check_source",
    "check_task",
    "check_tasks",
    "normalize_source",
    "parse_source",
    "shutdown_workers",
    "size_constants",
    "smoke_ladder",
    "smoke_scale",
    "smoke_sources",
    "task_id",
]
