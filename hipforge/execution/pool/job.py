"""One evaluation inside a pool worker (a local worker process or a Ray task).

The worker's device is whatever its environment makes visible (the local pool pins one GPU per
process, Ray sets it per task). Timed phases hold that device alone across every process of the machine
(hipforge.execution.device_lock), so two workers sharing a GPU never time at once; warm sandbox servers
started for another device are dropped, because they inherited the old device environment.
"""

from __future__ import annotations

import threading

from hipforge.execution.config import EvalConfig
from hipforge.execution.device_lock import DeviceLock, device_key
from hipforge.execution.evaluate import evaluate, shutdown
from hipforge.execution.verdict import EvalResult

_locks: dict[str, DeviceLock] = {}
_pinned: list[str] = []  # the device the warm sandbox servers of this process were started for
_guard = threading.Lock()


def evaluate_job(candidate_source: str, task_source: str, config: EvalConfig) -> EvalResult:
    key = device_key(config.backend)
    with _guard:
        if _pinned and _pinned[0] != key:
            shutdown()  # their environment names the previous device
        _pinned[:] = [key]
        lock = _locks.setdefault(key, DeviceLock(key))
    return evaluate(candidate_source, task_source, config, device_lock=lock)
