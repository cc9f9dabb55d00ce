"""Lazy optimization (Dr. Kernel, arXiv 2602.05885): correct, but the candidate's own kernels do a trivial
part while ATen does the rest, and it is no faster. ``reject_lazy`` fits ``RewardRule(reject=...)``."""

from __future__ import annotations

from hipforge.execution.profile.signals import LOW_COVERAGE
from hipforge.execution.verdict import EvalResult


def is_lazy(coverage: float, speedup: float | None, min_coverage: float = LOW_COVERAGE,
            min_speedup: float = 1.1) -> bool:
    """Under ``min_coverage`` of the forward in our kernels and not faster than ``min_speedup`` over eager.
    The margin above 1: a candidate leaving all the work to ATen times like the reference, within noise
    (1.002x measured on the H200), so "not slower" must not clear it."""
    if not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage is a share of forward time in [0, 1], got {coverage}")
    return coverage < min_coverage and (speedup is None or speedup < min_speedup)


def reject_lazy(result: EvalResult, coverage: float | None) -> bool:
    """A reward's lazy check: only a measured coverage can reject (None: not profiled, not rejected)."""
    return coverage is not None and is_lazy(coverage, result.speedup_eager)
