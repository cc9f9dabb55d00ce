"""Dagster's default run launcher plus the worker health check that run monitoring needs: the default one
has none, so a run whose worker was killed (SIGKILL, the OOM killer) stayed STARTED and kept its `gpu`
pool slot until freed by hand. With this, the daemon marks such a run failed and frees its slots."""

from __future__ import annotations

import re
from pathlib import Path

from dagster import DagsterEventType, DagsterRun
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus

_STARTED = re.compile(r"Started process for run \(pid: (\d+)\)")


class LocalRunLauncher(DefaultRunLauncher):
    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        pid = worker_pid(self._instance, run.run_id)
        if pid is None:  # the worker has not said who it is yet: nothing to judge
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no run worker pid recorded yet")
        state = process_state(pid)
        if state is None or state in "ZX":
            return CheckRunHealthResult(WorkerStatus.FAILED, f"the run worker (pid {pid}) is gone")
        return CheckRunHealthResult(WorkerStatus.RUNNING)


def worker_pid(instance: object, run_id: str) -> int | None:
    """The pid of the run's worker, from the engine event the code server logs when it starts one (the
    last one: a resumed run has a newer worker)."""
    pids = [int(m.group(1)) for event in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)
            if (m := _STARTED.search(event.message or ""))]
    return pids[-1] if pids else None


def process_state(pid: int) -> str | None:
    """The process's state letter (R, S, D, Z, ...), None if there is no such process on this host."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2]
