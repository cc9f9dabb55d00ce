"""TRLOO advantages, reward smoothing and the reward rule: exact arithmetic, checked against hand values."""

from __future__ import annotations

import statistics

import pytest

from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.train.reward import RewardRule
from hipforge.train.smoothing import RewardSmoother
from hipforge.train.trloo import Trajectory, grpo_scaled, leave_one_out, returns_to_go, trloo_advantages


def test_leave_one_out_is_value_minus_mean_of_the_others() -> None:
    values = [1.0, 2.0, 3.0, 6.0]
    expected = [v - (sum(values) - v) / 3 for v in values]  # [-10/3, -2, -2/3, 4]
    assert leave_one_out(values) == pytest.approx(expected, abs=1e-12)
    assert leave_one_out(values)[3] == pytest.approx(4.0, abs=1e-12)
    assert leave_one_out([5.0]) == [0.0]  # no one to compare with


def test_trl_scaled_rewards_give_exactly_leave_one_out() -> None:
    rewards, g = [0.0, 0.5, 3.0, 1.25], 4
    scaled = grpo_scaled(rewards, g)
    trl_advantage = [s - sum(scaled) / g for s in scaled]  # TRL GRPO, scale_rewards="none"
    assert trl_advantage == pytest.approx(leave_one_out(rewards), abs=1e-12)
    with pytest.raises(ValueError, match="at least 2"):
        grpo_scaled(rewards, 1)


def test_returns_to_go() -> None:
    assert returns_to_go([0.0, 0.0, 2.0]) == [2.0, 2.0, 2.0]
    assert returns_to_go([1.0, 0.0, 2.0], gamma=0.5) == [1.5, 1.0, 2.0]


def test_trloo_groups_by_prompt_and_turn_over_return_to_go() -> None:
    trajectories = [
        Trajectory(0, (0.0, 3.0)),  # failed, then fixed on the retry
        Trajectory(0, (2.0,)),
        Trajectory(0, (0.0, 0.0)),  # failed twice
        Trajectory(0, (1.0,)),
        Trajectory(1, (0.0,)),  # another prompt: its own group
        Trajectory(1, (4.0,)),
    ]
    adv = trloo_advantages(trajectories)
    # prompt 0, turn 0: returns-to-go 3, 2, 0, 1 (mean 1.5, N 4)
    assert [adv[i][0] for i in range(4)] == pytest.approx([2.0, 2 / 3, -2.0, -2 / 3], abs=1e-12)
    # prompt 0, turn 1: only the two that retried, returns 3 and 0: 2/1 * (±1.5)
    assert adv[0][1] == pytest.approx(3.0) and adv[2][1] == pytest.approx(-3.0)
    # prompt 1: two trajectories, 0 and 4
    assert adv[4] == pytest.approx([-4.0]) and adv[5] == pytest.approx([4.0])


def test_smoothing_clips_beyond_k_sigma_of_the_window() -> None:
    smoother = RewardSmoother(window=100, sigmas=1.5)
    assert smoother([0.0] * 20) == [0.0] * 20
    window = [0.0] * 20 + [10.0]
    high = statistics.fmean(window) + 1.5 * statistics.pstdev(window)
    assert smoother([10.0]) == [pytest.approx(high, abs=1e-12)]
    assert high < 10.0 and smoother.clipped == 1


def test_smoothing_window_forgets_old_rewards() -> None:
    smoother = RewardSmoother(window=5, sigmas=1.5)
    smoother([10.0] * 5)
    # the window is now [10, 10, 10, 10, 0]: mean 8, sigma 4, so 0 is clipped up to 8 - 1.5 * 4 = 2
    assert smoother([0.0]) == [pytest.approx(2.0, abs=1e-12)]
    within = smoother([8.0])  # inside the band: unchanged
    assert within == [8.0]
    with pytest.raises(ValueError):
        RewardSmoother(window=0)


def _correct(speedup: float) -> EvalResult:
    return EvalResult(Verdict.CORRECT, speedup_eager=speedup)


def test_reward_is_zero_unless_correct_and_capped_at_3x() -> None:
    rule = RewardRule()
    assert rule(_correct(0.5)) == 0.5
    assert rule(_correct(2.9)) == 2.9
    assert rule(_correct(7.0)) == 3.0
    for verdict in (Verdict.COMPILE_ERROR, Verdict.INCORRECT, Verdict.HACKED, Verdict.TIMEOUT):
        assert rule(EvalResult(verdict, speedup_eager=5.0)) == 0.0
    assert RewardRule(cap=2.0, correct_bonus=1.0)(_correct(7.0)) == 3.0


def test_reward_coverage_term_and_lazy_rejection() -> None:
    assert RewardRule()(_correct(1.0), coverage=0.2) == 1.0  # default: coverage ignored
    assert RewardRule(coverage_weight=0.5)(_correct(2.0), coverage=0.8) == pytest.approx(2.0 * 0.9)
    assert RewardRule(coverage_weight=0.5)(_correct(2.0)) == pytest.approx(2.0)  # not profiled: not scaled
    with pytest.raises(ValueError, match="coverage_weight"):
        RewardRule(coverage_weight=1.5)
    lazy = RewardRule(lazy_below=0.3)
    assert lazy(_correct(2.0), coverage=0.1) == 0.0 and lazy(_correct(2.0), coverage=0.5) == 2.0
    custom = RewardRule(reject=lambda result, coverage: (result.speedup_eager or 0) > 2.5)
    assert custom(_correct(2.7)) == 0.0
    with pytest.raises(ValueError, match="coverage"):
        RewardRule()(_correct(1.0), coverage=1.5)


def test_presets_and_overrides() -> None:
    from dataclasses import fields

    from hip_assets.training.assets import GRPORunConfig, SFTRunConfig
    from hipforge.train.config import GRPOHyper, SFTHyper, preset

    seed = preset("seed", "sft")
    assert (seed.epochs, seed.batch_size, seed.learning_rate) == (3.0, 2, 2e-5)
    assert preset("seed", "grpo").num_generations == 4 and preset("seed", "grpo").max_retries == 3
    assert preset("embedded", "sft", {"max_steps": 5, "learning_rate": None}).max_steps == 5
    with pytest.raises(ValueError, match="unknown preset"):
        preset("huge", "sft")
    with pytest.raises(ValueError, match="no hyperparameter"):
        preset("seed", "sft", {"momentum": 0.9})
    # every Dagster config field overrides a real hyperparameter
    assert set(SFTRunConfig.model_fields) - {"preset"} <= {f.name for f in fields(SFTHyper)}
    assert set(GRPORunConfig.model_fields) - {"preset"} <= {f.name for f in fields(GRPOHyper)}
