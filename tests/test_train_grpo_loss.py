"""What GRPO's loss really trains on, through one real TRL step: our TRLOO advantages (not TRL's own), and no
gradient from the feedback tokens the environment wrote (env_mask 0)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.tasks.library import load_library
from hipforge.train.base_model import TinyQwen2, build_tiny, load
from hipforge.train.config import EMBEDDED_GRPO
from hipforge.train.records import rl_record
from hipforge.train.scoring import Job, Scored

SPEC = TinyQwen2(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                 intermediate_size=64, vocab_size=400, max_position_embeddings=2048)
# per scorer call, the rewards of its candidates: turn 0 of all four, then the retries of the two that failed
REWARDS = [[2.0, 0.0, 0.0, 1.0], [0.0, 3.0]]


class ScriptedScorer:
    """Rewards by call and position, correct when positive: a multi-turn step whose advantages we know."""

    def __init__(self) -> None:
        self.calls, self.evaluations, self.executor_evaluations, self.seconds = 0, 0, 0, 0.0

    def __call__(self, jobs: Sequence[Job], step: int = 0) -> list[Scored]:
        rewards = REWARDS[self.calls]
        assert len(rewards) == len(jobs), "the rollout retried other candidates than the script expects"
        self.calls += 1
        self.evaluations += len(jobs)
        return [Scored(EvalResult(Verdict.CORRECT, speedup_eager=r) if r else
                       EvalResult(Verdict.COMPILE_ERROR, "error: expected ';'"), r, f"k{self.calls}-{i}")
                for i, r in enumerate(rewards)]


def expected_advantages(env_mask: list[int], turn_advantages: list[float], width: int) -> list[float]:
    """Each run of model tokens (env_mask 1) is one turn and carries that turn's advantage; feedback and
    padding carry 0."""
    row, turn = [0.0] * width, -1
    for i, m in enumerate(env_mask):
        if m and (i == 0 or not env_mask[i - 1]):
            turn += 1
        if m:
            row[i] = turn_advantages[turn]
    return row


@pytest.fixture(scope="module")
def step(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One TRLOOTrainer step; what its loss saw and the gradient at the final hidden states (the fused LM
    head's input: position p's state feeds only the logits that predict token p + 1)."""
    import torch

    from hipforge.train.grpo import build_trainer

    tmp = tmp_path_factory.mktemp("grpo")
    task = load_library()[0]
    build_tiny([t.source for t in load_library()[:8]], tmp / "base", SPEC)
    model, tokenizer = load(tmp / "base")
    record = rl_record("t1", task.name, task.source, task.source, "", "brief")
    # no smoothing (a huge band) and no sampling randomness in what we check: the advantages are exact
    hyper = dataclasses.replace(EMBEDDED_GRPO, max_steps=1, max_new_tokens=5, max_retries=1, learning_rate=0.0,
                                smoothing_sigmas=1e9)
    trainer, rollout = build_trainer(model, tokenizer, [record], tmp / "rl", hyper, ScriptedScorer())  # type: ignore[arg-type]
    seen: dict[str, Any] = {"hidden": []}
    original, output = trainer._compute_loss, rollout.output

    def keep_episodes(episodes: Any) -> dict[str, list]:
        out = output(episodes)
        # in the rollout's order, episode 0 .. 3 (TRL shuffles the rows), with what the rollout calls feedback
        seen["episodes"], seen["env_masks"] = out["completion_ids"], out["env_mask"]
        return out

    def capture(model_: Any, inputs: dict[str, Any]) -> Any:
        seen["inputs"] = inputs
        return original(model_, inputs)

    def keep_grad(_module: Any, _args: Any, output: Any) -> None:
        if output.requires_grad:
            output.retain_grad()
            seen["hidden"].append(output)

    trainer._compute_loss, rollout.output = capture, keep_episodes
    handle = trainer.model.model.norm.register_forward_hook(keep_grad)
    try:
        trainer.train()
        # the same loss again with advantage 1 on every token: only env_mask can keep feedback out of it now (our
        # advantages are 0 there too, which alone would also zero its gradient)
        seen["step_hidden"], seen["hidden"] = seen["hidden"], []
        trainer.model.zero_grad()
        original(trainer.model, {**seen["inputs"], "advantages": torch.ones_like(seen["inputs"]["advantages"])
                                 }).backward()
    finally:
        handle.remove()
    return seen


def test_the_loss_uses_exactly_our_trloo_advantages(step: dict[str, Any]) -> None:
    inputs = step["inputs"]
    advantages = inputs["advantages"]
    width = inputs["completion_ids"].shape[1]
    assert tuple(advantages.shape) == (4, width), "the loss got per-sequence advantages, not our per-token ones"
    # returns-to-go per trajectory: [2], [0, 0], [3, 3], [1]; turn 0 group (2, 0, 3, 1), turn 1 group (0, 3)
    loo = [4 / 3 * (g - 1.5) for g in (2.0, 0.0, 3.0, 1.0)]
    per_turn = [[loo[0]], [loo[1], -3.0], [loo[2], 3.0], [loo[3]]]
    lengths = inputs["completion_mask"].sum(1).tolist()
    rows = inputs["completion_ids"].tolist()
    for row, ids, length in zip(advantages.tolist(), rows, lengths, strict=True):
        episode = step["episodes"].index(ids[:length])
        mask = step["env_masks"][episode]
        assert row == pytest.approx(expected_advantages(mask, per_turn[episode], width), abs=1e-6)
    assert any(0 in mask for mask in step["env_masks"]), "no feedback tokens: the retries did not happen"


@pytest.mark.parametrize("which", ["step_hidden", "hidden"])
def test_feedback_tokens_get_no_gradient(step: dict[str, Any], which: str) -> None:
    """In the training step (our advantages), and with advantage 1 everywhere (env_mask alone)."""
    import torch

    inputs = step["inputs"]
    prompt_width = inputs["prompt_ids"].shape[1]
    grads = torch.cat([h.grad for h in step[which]], dim=0)
    per_position = grads.abs().sum(-1)  # (batch, prompt + completion)
    lengths = inputs["completion_mask"].sum(1).tolist()
    feedback = 0
    for row, (ids, length) in enumerate(zip(inputs["completion_ids"].tolist(), lengths, strict=True)):
        env_mask = step["env_masks"][step["episodes"].index(ids[:length])]
        for j in range(inputs["completion_ids"].shape[1]):
            g = per_position[row, prompt_width + j - 1].item()  # the state that predicts completion token j
            if j < length and env_mask[j]:
                assert g > 0, f"model token {j} of trajectory {row} got no gradient"
            else:
                feedback += j < length
                assert g == 0.0, f"feedback or padding token {j} of trajectory {row} got gradient {g}"
    assert feedback > 0, "no feedback tokens: the retries did not happen"
