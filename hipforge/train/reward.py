"""The executor's verdict as a reward: 0 unless the kernel compiled and is correct, then its speedup over
PyTorch eager, capped (3× by default). Optional: a coverage term (the share of the work the candidate's own
kernels do, measured by a profiler) and a hook that rejects lazy candidates (reward 0)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hipforge.execution.verdict import EvalResult, Verdict

LazyCheck = Callable[[EvalResult, "float | None"], bool]


@dataclass(frozen=True)
class RewardRule:
    cap: float = 3.0  # speedups beyond this earn no more: large ones are more often timing noise or hacks
    correct_bonus: float = 0.0  # added for any correct kernel, so a slow correct one beats a wrong one clearly
    coverage_weight: float = 0.0  # in [0, 1]: the reward is scaled by (1 - w) + w * coverage; 0: ignored (default)
    lazy_below: float | None = None  # coverage under this rejects the candidate as lazy (None: off)
    reject: LazyCheck | None = None  # a custom lazy-candidate check

    def __post_init__(self) -> None:
        if self.cap <= 0:
            raise ValueError(f"reward cap must be positive, got {self.cap}")
        if not 0.0 <= self.coverage_weight <= 1.0:
            raise ValueError(f"coverage_weight must be in [0, 1], got {self.coverage_weight}")

    def __call__(self, result: EvalResult, coverage: float | None = None) -> float:
        if result.verdict != Verdict.CORRECT:
            return 0.0
        if coverage is not None and not 0.0 <= coverage <= 1.0:
            raise ValueError(f"coverage is a share of the work in [0, 1], got {coverage}")
        if self.is_lazy(result, coverage):
            return 0.0
        speedup = max(result.speedup_eager or 0.0, 0.0)
        reward = self.correct_bonus + min(speedup, self.cap)
        # coverage scales the reward down: work left to ATen earns no credit for the speedup ATen made
        return reward * (1.0 - self.coverage_weight + self.coverage_weight * (coverage if coverage is not None
                                                                                else 1.0))

    def is_lazy(self, result: EvalResult, coverage: float | None) -> bool:
        if self.lazy_below is not None and coverage is not None and coverage < self.lazy_below:
            return True
        return bool(self.reject and self.reject(result, coverage))
