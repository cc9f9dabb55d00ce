"""How many worker threads the fiber runtime spreads a launch's blocks over, set by the candidate's process
between trials (hip_cpu_runtime.h reads HIPCPU_NUM_THREADS at every launch).

The cpu backend's timed trials run every launch on one worker: their time is CPU time (pairing.py), which
more workers never lower, while spawning and joining them (a thread and its fiber state per launch) cost a
small kernel's work several times over, by an amount that moved with the load on the cores (an elementwise
relu: 0.027 ms of CPU on one worker, 0.04-0.07 ms on two). Checked trials keep every worker, so blocks
still run concurrently where an output depends on their order."""

from __future__ import annotations

import os

VARIABLE = "HIPCPU_NUM_THREADS"
_STARTED_WITH = os.environ.get(VARIABLE)  # the job's own setting, restored once the timed trials end


def one_worker(on: bool) -> None:
    """On: each launch runs its blocks on the launching thread alone; off: as the job started."""
    if on:
        os.environ[VARIABLE] = "1"
    elif _STARTED_WITH is None:
        os.environ.pop(VARIABLE, None)
    else:
        os.environ[VARIABLE] = _STARTED_WITH
