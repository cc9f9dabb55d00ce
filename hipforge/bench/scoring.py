"""KernelBench's scores: fast_p (share of ALL tasks that are correct and faster than p x) and geomean speedup."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0)


@dataclass(frozen=True)
class TaskScore:
    name: str
    compiled: bool
    correct: bool
    speedup: float | None  # over the baseline (eager or torch.compile), for correct kernels


def fast_p(scores: Sequence[TaskScore], p: float) -> float:
    """Share of all tasks (declined and failed ones included) that are correct with speedup > p.

    fast_0 is the correct rate: a correct kernel has some positive speedup.
    """
    if not scores:
        return 0.0
    hits = sum(s.correct and (s.speedup or 0.0) > p for s in scores)
    return hits / len(scores)


def geomean_speedup(scores: Sequence[TaskScore]) -> float | None:
    """Geometric mean of the speedups of correct kernels (None when there are none)."""
    speedups = [s.speedup for s in scores if s.correct and s.speedup and s.speedup > 0]
    if not speedups:
        return None
    return math.exp(sum(math.log(x) for x in speedups) / len(speedups))


def summary(scores: Sequence[TaskScore]) -> dict[str, float | None]:
    """compile rate, correct rate, fast_p for the standard p, geomean speedup."""
    n = len(scores) or 1
    result: dict[str, float | None] = {
        "tasks": float(len(scores)),
        "compiled": sum(s.compiled for s in scores) / n,
        "correct": sum(s.correct for s in scores) / n,
    }
    result.update({f"fast_{p:g}": fast_p(scores, p) for p in FAST_P})
    result["geomean"] = geomean_speedup(scores)
    return result
