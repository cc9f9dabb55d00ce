"""Run a task's PyTorch reference in a sandbox and say whether it can enter the pipeline.

Each check is a job (role ``reference_check``) on a warm server of the same sandbox the evaluator uses
(hipforge.sandbox): a fork of a process that imported torch once, with a wall-time limit, an
address-space limit, a small thread count, no network and an environment without secrets. At smoke
scale the runner climbs the smoke ladder and keeps the first rung that runs cleanly. Nothing a reference
does (hang, crash, exhaust memory) can take the caller down.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Literal

from hipforge.sandbox.client import Server, resolve_mode
from hipforge.sandbox.pool import pool_for
from hipforge.tasks.errors import TaskError
from hipforge.tasks.smoke import SmokeSource, smoke_ladder, smoke_scale
from hipforge.tasks.source import check_source, task_id

Scale = Literal["smoke", "full"]
LIMITS: dict[str, tuple[float, int]] = {"smoke": (60.0, 4096), "full": (1800.0, 65536)}  # seconds, MB
# A bigger rung cannot fix these: stop climbing the ladder.
FINAL_CODES = {"non_tensor_output", "non_deterministic", "too_slow", "too_much_memory"}
WORKER_GRACE_S = 30.0  # on top of a job's own limit before the job is presumed stuck
ROLE = "hipforge.tasks.reference_check"
SANDBOX_UID = 64000  # the evaluator's sandbox user (EvalConfig.sandbox_uid)


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


def _run_one(server: Server, job: dict[str, Any]) -> dict[str, Any]:
    """One rung in a sandbox job; a job over its time is killed (its server stays warm)."""
    session = server.open({
        "nonce": secrets.token_hex(16), "mode": server.mode, "role": f"{ROLE}:run", "cache_dir": _scratch_cache(),
        "cache_writable": False, "record_writes": False, "uid": SANDBOX_UID, "gid": SANDBOX_UID, "tmp_size_mb": 256,
        "max_file_mb": 256, "max_processes": 256, "address_limit_mb": job["memory_limit_mb"],
        "rss_limit_mb": job["memory_limit_mb"] * 4, **job})
    deadline = time.monotonic() + job["time_limit_s"]
    event = session.next(deadline)
    if event is None:
        server.kill_job()
        if session.wait_exit(WORKER_GRACE_S) is None:
            server.kill()
        return _fail("too_slow", f"did not finish within the {job['time_limit_s']:g} s time limit")
    if event.get("event") == "reply":
        session.wait_exit(WORKER_GRACE_S) or server.kill()
        return {k: v for k, v in event.items() if k not in ("event", "nonce")}
    exit_ = session.exit or {}
    tail = server.tail().strip()[-1000:]
    last = f"; last output:\n{tail}" if tail else ""
    if exit_.get("lost"):
        server.kill()
        return _fail("crashed", f"the sandbox worker died with the job{last}")
    if exit_.get("memory") or exit_.get("signal") == "SIGKILL":
        return _fail("too_much_memory", f"killed by SIGKILL (the system ran out of memory){last}")
    if "signal" in exit_:
        return _fail("crashed", f"died with signal {exit_['signal']}{last}")
    return _fail("crashed", f"exited with status {exit_.get('code', '?')} before reporting{last}")


def _fail(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message[:1500]}


def _scratch_cache() -> str:
    """Task checks build nothing: an empty directory of their own is their (read-only) build cache."""
    return os.path.join(tempfile.gettempdir(), "hipforge-task-checks")


def shutdown_workers() -> None:
    """Stop the warm task-check servers (a fresh one sees the environment as it is now)."""
    pool_for(resolve_mode("auto"), (ROLE,)).close()


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
    with pool_for(resolve_mode("auto"), (ROLE,)).server() as server:
        for candidate in candidates:
            full = source if scale == "smoke" else None  # profiled at full size once it runs small
            reply = _run_one(server, {**job, "source": candidate.source, "full_source": full})
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
