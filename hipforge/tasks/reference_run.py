"""Run a task's PyTorch reference in a sandbox and say whether it can enter the pipeline.

Each check runs in a fork of a warm worker process (``worker.py``) that imported torch once: the
fork gets a wall-time limit, an address-space limit, a small thread count and an environment
without secrets. At smoke scale the runner climbs the smoke ladder and keeps the first rung that
runs cleanly. Nothing a reference does (hang, crash, exhaust memory) can take the caller down.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hipforge.tasks.errors import TaskError
from hipforge.tasks.smoke import SmokeSource, smoke_ladder, smoke_scale
from hipforge.tasks.source import check_source, task_id

Scale = Literal["smoke", "full"]
LIMITS: dict[str, tuple[float, int]] = {"smoke": (60.0, 4096), "full": (1800.0, 65536)}  # seconds, MB
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
# A bigger rung cannot fix these: stop climbing the ladder.
FINAL_CODES = {"non_tensor_output", "non_deterministic", "too_slow", "too_much_memory"}
WORKER_START_S = 300.0  # importing torch on a loaded 2-core machine can be slow
WORKER_GRACE_S = 30.0  # on top of a job's own limit before the worker itself is presumed stuck


@dataclass(frozen=True)
class ReferenceRun:
    """A reference that ran cleanly: what it returns and what it costs at the scale it ran."""

    name: str
    task_id: str  # of the original source, not the smoke-scaled one
    scale: Scale
    output_shapes: list[tuple[int, ...]]
    output_dtypes: list[str]
    seconds: float  # one forward pass (the faster of the two runs)
    init_seconds: float  # get_init_inputs + Model(...) + get_inputs
    constants: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # smoke changes: name -> (old, new)
    source: str = ""  # the source that ran (smoke-scaled at smoke scale)
    flops: int | None = None  # at full size (None: the meta device could not run it)
    bytes_moved: int | None = None  # inputs + parameters + outputs at full size: the least traffic
    full_shapes: list[tuple[int, ...]] = field(default_factory=list)  # output shapes at full size
    fp64_gap: float | None = None  # float32 output vs float64, in units of the 1e-4 tolerance (>1: ill-conditioned)


def scrubbed_env(threads: int) -> dict[str, str]:
    """The caller's environment without anything that looks like a credential, with thread caps."""
    env = {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in SECRET_MARKERS)}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    return env


class _Worker:
    """One warm sandbox process; runs one job at a time."""

    def __init__(self) -> None:
        self._owner = os.getpid()  # a forked caller must not share its parent's worker
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).with_name("worker.py"))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            env=scrubbed_env(1), start_new_session=True)
        self._buffer = b""
        self._reply(WORKER_START_S)

    def alive(self) -> bool:
        return self._owner == os.getpid() and self._proc.poll() is None

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(job).encode() + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise self._died("the sandbox worker exited") from None
        return self._reply(job["time_limit_s"] + WORKER_GRACE_S)

    def _reply(self, timeout: float) -> dict[str, Any]:
        assert self._proc.stdout is not None
        fd, deadline = self._proc.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise self._died(f"the sandbox worker did not answer within {timeout:g} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._died("the sandbox worker exited")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _died(self, why: str) -> TaskError:
        self.close()
        self._log.seek(0)
        tail = self._log.read().decode(errors="replace")[-1000:].strip()
        self._log.close()
        return TaskError("crashed", why + (f"; its output:\n{tail}" if tail else ""))

    def close(self) -> None:
        if self.alive():
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)  # a running fork follows (PR_SET_PDEATHSIG)
            except OSError:
                pass
        self._proc.wait()


_idle: list[_Worker] = []
_idle_lock = threading.Lock()


@contextmanager
def _borrow() -> Iterator[_Worker]:
    """A warm worker for the duration of one check; returned to the pool if it is still healthy."""
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is None or not worker.alive():
        worker = _Worker()
    try:
        yield worker
    finally:
        if worker.alive():
            with _idle_lock:
                _idle.append(worker)


@atexit.register
def shutdown_workers() -> None:
    """Stop every idle worker (they also die with the caller: their stdin closes)."""
    with _idle_lock:
        workers, _idle[:] = list(_idle), []
    for worker in workers:
        worker.close()


def check_task(source: str, name: str = "task", *, scale: Scale = "smoke", time_limit_s: float | None = None,
               memory_limit_mb: int | None = None, seed: int = 0, threads: int = 1) -> ReferenceRun:
    """Validate and run one reference; raise TaskError saying why it cannot enter the pipeline."""
    if scale not in LIMITS:
        raise ValueError(f"scale must be 'smoke' or 'full', not {scale!r}")
    check_source(source, f"<task {name}>")
    default_time, default_memory = LIMITS[scale]
    job = {"name": name, "seed": seed, "threads": threads, "time_limit_s": time_limit_s or default_time,
           "memory_limit_mb": memory_limit_mb or default_memory}
    candidates = smoke_ladder(source) if scale == "smoke" else [SmokeSource(source, {}, None)]
    error, runs = TaskError("crashed", "no candidate source to run"), []
    with _borrow() as worker:
        for candidate in candidates:
            full = source if scale == "smoke" else None  # profiled at full size once it runs small
            reply = worker.run({**job, "source": candidate.source, "full_source": full})
            if reply["ok"]:
                runs.append(ReferenceRun(
                    name=name, task_id=task_id(source), scale=scale,
                    output_shapes=[tuple(s) for s in reply["shapes"]], output_dtypes=reply["dtypes"],
                    seconds=reply["forward_s"], init_seconds=reply["init_s"],
                    constants=candidate.changed, source=candidate.source, flops=reply.get("flops"),
                    bytes_moved=reply.get("bytes"), full_shapes=[tuple(s) for s in reply.get("full_shapes", [])],
                    fp64_gap=reply.get("fp64_gap")))
                if (runs[-1].fp64_gap or 0.0) <= 1.0:
                    return runs[-1]
                continue  # too ill-conditioned to judge kernels at 1e-4: try larger sizes
            error = TaskError(reply["code"], reply["message"])
            if error.code in FINAL_CODES:
                break
    if runs:  # ill-conditioned at every size that runs: the smallest
        return runs[0]
    raise error


def check_tasks(items: Iterable[tuple[str, str]], workers: int = 2,
                **options: Any) -> Iterator[tuple[str, ReferenceRun | TaskError]]:
    """Check (name, source) pairs on ``workers`` warm workers; yield (name, run or error) as each finishes."""

    def one(name: str, source: str) -> tuple[str, ReferenceRun | TaskError]:
        try:
            return name, check_task(source, name, **options)
        except TaskError as e:
            return name, e

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(one, name, source) for name, source in items]
        for future in as_completed(futures):
            yield future.result()


def smoke_sources(items: Iterable[tuple[str, str]], workers: int = 2) -> dict[str, str]:
    """name -> the source a cpu-backend check runs: the smallest sizes at which the reference runs and is
    well-conditioned at fp32's tolerance (check_task's ladder); the first rung when it runs at none."""
    items = list(items)
    sources = dict(items)
    return {name: run.source if isinstance(run, ReferenceRun) else smoke_scale(sources[name]).source
            for name, run in check_tasks(items, workers=workers)}
