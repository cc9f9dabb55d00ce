"""One evaluation inside a pool worker (a local worker process or a Ray task).

The worker's device is whatever its environment makes visible (the local pool pins one GPU per
process, Ray sets it per task). The timed part holds that device's lock across every process of the
machine, so two workers sharing a GPU never time at once; warm sandbox servers started for another
device are dropped, because they inherited the old device environment.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from pathlib import Path

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate, shutdown
from hipforge.execution.verdict import EvalResult

# the variables that pick a process's GPU, first one set by the local pool
VISIBLE_DEVICES = {"cuda": ("CUDA_VISIBLE_DEVICES",), "rocm": ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")}


def device_key(backend: str) -> str:
    """Names the device this process evaluates on: "cpu", "gpu-0", "gpu-all" (nothing pinned)."""
    names = VISIBLE_DEVICES.get(backend)
    if names is None:
        return "cpu"
    ids = next((os.environ[n] for n in names if os.environ.get(n)), "")
    return f"gpu-{ids.replace(',', '_')}" if ids else "gpu-all"


class DeviceLock:
    """A machine-wide lock of one device: a thread lock inside the process, flock across processes."""

    def __init__(self, key: str) -> None:
        root = Path(tempfile.gettempdir()) / "hipforge-device-locks"
        root.mkdir(mode=0o777, exist_ok=True)
        self.path = root / f"{key}.lock"
        self._threads = threading.Lock()
        self._fd = -1

    def acquire(self) -> bool:
        self._threads.acquire()
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        self._threads.release()


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
    return evaluate(candidate_source, task_source, config, run_lock=lock)  # type: ignore[arg-type]
