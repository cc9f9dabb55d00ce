"""fast_p and geomean as KernelBench defines them: over all tasks, failures included."""

from __future__ import annotations

import math

from hipforge.bench.scoring import TaskScore, fast_p, geomean_speedup, summary

SCORES = [
    TaskScore("a", True, True, 2.0),
    TaskScore("b", True, True, 0.5),
    TaskScore("c", True, False, None),
    TaskScore("d", False, False, None),
]


def test_fast_p_counts_every_task_in_the_denominator() -> None:
    assert fast_p(SCORES, 0.0) == 0.5  # the correct rate
    assert fast_p(SCORES, 1.0) == 0.25
    assert fast_p(SCORES, 2.0) == 0.0  # strictly faster than p
    assert fast_p([], 1.0) == 0.0


def test_geomean_over_correct_kernels_only() -> None:
    assert math.isclose(geomean_speedup(SCORES), 1.0)
    assert geomean_speedup(SCORES[2:]) is None


def test_summary_rates() -> None:
    result = summary(SCORES)
    assert result["compiled"] == 0.75 and result["correct"] == 0.5 and result["fast_0.5"] == 0.25
