"""Sanity checks every synthetic module passes before it enters the pipeline.

The task model's sandbox (``check_task``) runs it at smoke scale: static checks and banned
constructs, construction from get_init_inputs, a forward on get_inputs, finite outputs, the same
output twice for one seed, time and memory limits. A second sandboxed run of the smoke source with
``probe.py`` appended then rejects modules whose output a constant or an input copy could match,
that ignore an input, or whose input functions disagree with themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from hipforge.tasks.errors import TaskError
from hipforge.tasks.reference_run import ReferenceRun, check_task
from hipforge.tasks.synth.probe import probe_failure, probe_source

DEDUPE_CODES = ("duplicate", "near_duplicate")


@dataclass(frozen=True)
class Budget:
    """Limits for one synthetic module at smoke scale, and the tolerance a verifier compares with."""

    time_limit_s: float = 30.0  # per sandboxed run, construction and both forwards included
    memory_limit_mb: int = 2048
    max_forward_s: float = 2.0  # one smoke forward; more means the full-scale task is unreasonable
    tolerance: float = 1e-2  # KernelBench's loosest fp32 tolerance: a constant must not pass even that


DEFAULT_BUDGET = Budget()


@dataclass(frozen=True)
class Rejection:
    code: str  # a TaskError code, a probe code, "duplicate" or "near_duplicate"
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def sanity_check(source: str, name: str, budget: Budget = DEFAULT_BUDGET) -> ReferenceRun | Rejection:
    """The smoke run of an acceptable module, or why it is not acceptable."""
    limits = {"time_limit_s": budget.time_limit_s, "memory_limit_mb": budget.memory_limit_mb}
    try:
        run = check_task(source, name, **limits)
    except TaskError as err:
        return Rejection(err.code, err.message)
    if run.seconds > budget.max_forward_s:
        return Rejection(
            "too_slow",
            f"one smoke-scale forward took {run.seconds:.2f} s (budget {budget.max_forward_s:g} s)",
        )
    try:
        check_task(probe_source(run.source, budget.tolerance), name, scale="full", **limits)
    except TaskError as err:
        return Rejection(*(probe_failure(err) or (err.code, f"under the sanity probe: {err.message}")))
    return run
