"""Reward smoothing: each reward joins a rolling window of the last N; values beyond k σ of the window's
mean are clipped to that band, so one lucky (or broken) timing cannot dominate a batch's advantages."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Sequence


class RewardSmoother:
    def __init__(self, window: int = 100, sigmas: float = 1.5) -> None:
        if window < 1 or sigmas <= 0:
            raise ValueError(f"smoothing needs window >= 1 and sigmas > 0, got {window} and {sigmas}")
        self.sigmas = sigmas
        self.history: deque[float] = deque(maxlen=window)
        self.clipped = 0  # how many rewards were clipped so far (logged)

    def __call__(self, rewards: Sequence[float]) -> list[float]:
        """Add the batch's raw rewards to the window, then clip each to mean ± k·σ of the window."""
        self.history.extend(rewards)
        mean = statistics.fmean(self.history)
        sigma = statistics.pstdev(self.history) if len(self.history) > 1 else 0.0
        low, high = mean - self.sigmas * sigma, mean + self.sigmas * sigma
        out = [min(max(r, low), high) for r in rewards]
        self.clipped += sum(o != r for o, r in zip(out, rewards, strict=True))
        return out
