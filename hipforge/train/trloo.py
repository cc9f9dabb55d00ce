"""Turn-level leave-one-out advantages (TRLOO, Dr. Kernel): A = N/(N-1) · (G − mean G), where G is a turn's
return-to-go and the mean runs over the N trajectories of the same prompt that reached the same turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Trajectory:
    group: int  # which prompt it answers (GRPO's group)
    rewards: tuple[float, ...]  # one per turn, in order


def returns_to_go(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """G_t = r_t + γ·G_{t+1}: what a turn's action earned from there on, retries included."""
    out, running = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def leave_one_out(values: Sequence[float]) -> list[float]:
    """v_i minus the mean of the others, i.e. N/(N-1)·(v_i − mean); a lone value has no baseline: 0."""
    n = len(values)
    if n < 2:
        return [0.0] * n
    mean = sum(values) / n
    return [n / (n - 1) * (v - mean) for v in values]


def trloo_advantages(trajectories: Sequence[Trajectory], gamma: float = 1.0) -> list[list[float]]:
    """Per trajectory, one advantage per turn, grouped by (prompt, turn)."""
    returns = [returns_to_go(t.rewards, gamma) for t in trajectories]
    groups: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for i, (trajectory, rtg) in enumerate(zip(trajectories, returns, strict=True)):
        for turn, g in enumerate(rtg):
            groups.setdefault((trajectory.group, turn), []).append((i, g))
    advantages = [[0.0] * len(r) for r in returns]
    for (_, turn), members in groups.items():
        for (i, _), advantage in zip(members, leave_one_out([g for _, g in members]), strict=True):
            advantages[i][turn] = advantage
    return advantages


def grpo_scaled(rewards: Sequence[float], group_size: int) -> list[float]:
    """Rewards scaled by G/(G−1): TRL GRPO with scale_rewards="none" then yields exactly leave-one-out."""
    if group_size < 2:
        raise ValueError(f"leave-one-out needs at least 2 generations per prompt, got {group_size}")
    return [r * group_size / (group_size - 1) for r in rewards]
