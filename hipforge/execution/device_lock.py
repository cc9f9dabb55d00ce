"""Who has a device while evaluations run on it. A timed phase (the calibration, a batch of timed trials, the
reference's timings) holds the device alone; device work whose speed is not measured (checked trials, the
reference's outputs for them, the op trace) shares it with other such work, never with a timed phase. So
evaluations in flight overlap everything but their timing.

flock locks on files per device, so this holds across the threads and the processes of one machine (each
acquisition opens its own descriptor). A turnstile makes work that arrives while a timed phase waits queue
behind it: flock alone would let a stream of sharers starve the timed phase. A phase never takes the lock while
holding it (flock would deadlock on its own shared hold)."""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from hipforge.execution import quiet

# the variables that pick a process's GPU, first one set by the local pool
VISIBLE_DEVICES = {"cuda": ("CUDA_VISIBLE_DEVICES",), "rocm": ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")}


def device_key(backend: str) -> str:
    """Names the device this process evaluates on: "cpu", "gpu-0", "gpu-all" (nothing pinned)."""
    names = VISIBLE_DEVICES.get(backend)
    if names is None:
        return "cpu"
    ids = next((os.environ[n] for n in names if os.environ.get(n)), "")
    return f"gpu-{ids.replace(',', '_')}" if ids else "gpu-all"


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class DeviceLock:
    def __init__(self, key: str) -> None:
        root = Path(tempfile.gettempdir()) / "hipforge-device-locks"
        root.mkdir(mode=0o777, exist_ok=True)
        self.device, self.turnstile = root / f"{key}.lock", root / f"{key}.turnstile"

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """A timed phase: the device alone, once the shared work already running has finished."""
        with _flock(self.turnstile, fcntl.LOCK_EX), _flock(self.device, fcntl.LOCK_EX):
            yield

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Work that is not timed: beside other such work, never beside a timed phase."""
        with _flock(self.turnstile, fcntl.LOCK_EX):  # waits while a timed phase waits or runs
            pass
        with _flock(self.device, fcntl.LOCK_SH):
            yield


class Phases:
    """An evaluation's phases on its device: timed ones hold it alone, the rest share it. On a cpu-backend
    machine of few cores the device is those cores, and every phase of the trials holds them alone
    (hipforge.execution.quiet): a checked trial that shares them with builds lets a race with work left
    running after return (a detached thread) fall the candidate's way. A batch of timed trials taken again
    also waits for the builds in flight (``retry``)."""

    def __init__(self, lock: DeviceLock, backend: str) -> None:
        self.lock = lock
        self.alone, self.retry = quiet.phases(backend)
        self.spent: dict[str, list[float]] = {}  # kind -> [seconds waiting for the hold, seconds holding it]

    def timed(self) -> AbstractContextManager[None]:
        return self._held("timed", self.lock.exclusive)

    def shared(self) -> AbstractContextManager[None]:
        return self._held("shared", self.lock.shared)

    @contextmanager
    def _held(self, kind: str, hold: Callable[[], AbstractContextManager[None]]) -> Iterator[None]:
        asked = time.monotonic()
        with hold(), quiet.timing(self.alone):
            granted = time.monotonic()
            try:
                yield
            finally:
                spent = self.spent.setdefault(kind, [0.0, 0.0])
                spent[0] += granted - asked
                spent[1] += time.monotonic() - granted

    def summary(self) -> dict[str, dict[str, float]]:
        """Where the evaluation's device phases went: how long each kind waited for its hold and held it."""
        return {k: {"wait_s": round(w, 3), "hold_s": round(h, 3)} for k, (w, h) in self.spent.items()}
