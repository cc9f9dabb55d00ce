"""Multi-turn rollouts: failed candidates get feedback turns, and env_mask is 0 exactly over those tokens."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.tasks.library import load_library
from hipforge.train.base_model import TinyQwen2, build_tiny, load
from hipforge.train.config import EMBEDDED_GRPO
from hipforge.train.records import rl_record
from hipforge.train.reward import RewardRule
from hipforge.train.rollout import Episode, MultiTurnRollout, Turn, assemble, feedback_text
from hipforge.train.scoring import CandidateScorer, Job, Scored, syntax_verdict

SPEC = TinyQwen2(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                 intermediate_size=64, vocab_size=400, max_position_embeddings=2048)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    out = tmp_path_factory.mktemp("tiny")
    build_tiny([t.source for t in load_library()[:12]], out, SPEC)
    return load(out)


class FakeScorer:
    """Correct on every even call, a compile error otherwise: both paths of a rollout in one run."""

    def __init__(self) -> None:
        self.calls, self.evaluations, self.executor_evaluations, self.seconds = 0, 0, 0, 0.0
        self.jobs: list[Job] = []

    def __call__(self, jobs: Sequence[Job], step: int = 0) -> list[Scored]:
        out = []
        for _ in jobs:
            ok = self.calls % 2 == 0
            self.calls += 1
            result = EvalResult(Verdict.CORRECT, speedup_eager=1.5) if ok else \
                EvalResult(Verdict.COMPILE_ERROR, "error: expected ';' after expression")
            out.append(Scored(result, 1.5 if ok else 0.0, f"k{self.calls}"))
        self.jobs += jobs
        self.evaluations += len(jobs)
        return out


def test_assemble_masks_exactly_the_feedback_spans() -> None:
    turns = [Turn([], [5, 6, 7], [-0.1, -0.2, -0.3]), Turn([90, 91], [8, 9], [-0.4, -0.5]),
             Turn([92], [10], [-0.6])]
    ids, logps, mask, spans = assemble(turns)
    assert ids == [5, 6, 7, 90, 91, 8, 9, 92, 10]
    assert mask == [1, 1, 1, 0, 0, 1, 1, 0, 1]
    assert logps[3:5] == [0.0, 0.0] and logps[5] == -0.4
    assert spans == [(0, 3), (5, 7), (8, 9)]


def test_feedback_text_closes_the_turn_and_opens_the_next(tiny: tuple[Any, Any]) -> None:
    _, tokenizer = tiny
    open_turn = feedback_text(tokenizer, "verdict: compile_error", ended_with_eos=False)
    assert open_turn == "<|im_end|>\n<|im_start|>user\nverdict: compile_error<|im_end|>\n<|im_start|>assistant\n"
    assert feedback_text(tokenizer, "x", ended_with_eos=True).startswith("\n<|im_start|>user\nx")


def test_failed_candidates_retry_with_masked_feedback(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    task = load_library()[0]
    record = rl_record("t1", task.name, task.source, task.source, "Lessons: none yet.", system="brief")
    hyper = dataclasses.replace(EMBEDDED_GRPO, max_new_tokens=8, max_retries=2)
    scorer = FakeScorer()
    rollout = MultiTurnRollout(tokenizer, [record], scorer, hyper)  # type: ignore[arg-type]
    episodes = [Episode(0, record, rollout._prompt_ids(record.prompt)) for _ in range(4)]
    rollout.run(model, episodes, step=0)
    out = rollout.output(episodes)
    # calls 0, 2 are correct on turn 0 (episodes 0 and 2); 1 and 3 retry; of those, call 4 (episode 1) is correct
    assert [len(e.turns) for e in episodes] == [1, 2, 1, 3]
    for episode, ids, mask in zip(episodes, out["completion_ids"], out["env_mask"], strict=True):
        _, _, _, spans = assemble(episode.turns)
        model_positions = {i for start, end in spans for i in range(start, end)}
        assert [i for i, m in enumerate(mask) if m == 1] == sorted(model_positions)
        feedback = [ids[i] for i, m in enumerate(mask) if m == 0]
        assert feedback == [t for turn in episode.turns for t in turn.feedback_ids]
        if len(episode.turns) > 1:
            assert "compile_error" in tokenizer.decode(episode.turns[1].feedback_ids)
    # a retry names the attempt it fixes as its parent (lineage), the first attempt has none
    assert scorer.jobs[0].parent is None and scorer.jobs[4].parent is not None
    assert len(out["prompt_ids"]) == 4 and all(len(lp) == len(ids) for lp, ids in
                                               zip(out["logprobs"], out["completion_ids"], strict=True))
    width = max(len(ids) for ids in out["completion_ids"])
    advantages = rollout.token_advantages(width)
    for row, mask in zip(advantages, out["env_mask"], strict=True):
        assert all(a == 0.0 for a, m in zip(row, mask, strict=False) if m == 0)


def test_syntax_gate() -> None:
    assert syntax_verdict("import torch\n") is None
    verdict = syntax_verdict("def f(:\n")
    assert verdict is not None and verdict.verdict == Verdict.COMPILE_ERROR and "not a Python file" in verdict.message


def test_scorer_records_every_candidate_with_its_parent() -> None:
    recorded: list[tuple[str, str, str, str | None, int]] = []

    def recorder(task_id: str, source: str, result: EvalResult, parent: str | None, step: int) -> str:
        recorded.append((task_id, source, result.backend, parent, step))
        return f"kid-{len(recorded)}"

    scorer = CandidateScorer(EvalConfig(backend="cpu"), RewardRule(), recorder=recorder)
    scored = scorer([Job("t1", "def f(:", "TASK"), Job("t1", "x = (", "TASK", parent="kid-1")], step=3)
    assert [s.reward for s in scored] == [0.0, 0.0] and [s.kernel_id for s in scored] == ["kid-1", "kid-2"]
    assert recorded == [("t1", "def f(:", "cpu", None, 3), ("t1", "x = (", "cpu", "kid-1", 3)]
    assert scorer.evaluations == 2 and scorer.executor_evaluations == 0


def test_unknown_base_model_path_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        load(tmp_path / "missing")
