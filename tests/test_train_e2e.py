"""One SFT step and one GRPO step (TRL, real trainers) on a tiny model, with a fake reward instead of the executor."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.tasks.library import load_library
from hipforge.train.base_model import TinyQwen2, build_tiny
from hipforge.train.config import EMBEDDED_GRPO, EMBEDDED_SFT
from hipforge.train.records import rl_record, sft_record
from hipforge.train.scoring import Job, Scored

SPEC = TinyQwen2(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                 intermediate_size=64, vocab_size=400, max_position_embeddings=2048)
KERNEL = "import os\nfrom torch.utils.cpp_extension import load_inline\n\nclass ModelNew:\n    pass\n"


class LengthReward:
    """Stands in for the executor: a candidate's reward is its length mod 3, so a group's rewards differ."""

    evaluations = executor_evaluations = 0
    seconds = 0.0

    def __call__(self, jobs: Sequence[Job], step: int = 0) -> list[Scored]:
        self.evaluations += len(jobs)
        return [Scored(EvalResult(Verdict.CORRECT if len(j.source) % 3 else Verdict.INCORRECT),
                       float(len(j.source) % 3), f"k{i}") for i, j in enumerate(jobs)]


def test_sft_then_grpo_step(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    from hipforge.train.grpo import train_grpo
    from hipforge.train.sft import train_sft

    tasks = load_library()[:4]
    build_tiny([t.source for t in tasks] + [KERNEL], tmp_path / "base", SPEC)
    sft = [sft_record(f"t{i}", t.name, t.source, f"k{i}", KERNEL, 1.0, "brief") for i, t in enumerate(tasks)]
    metrics = train_sft(str(tmp_path / "base"), sft, tmp_path / "sft",
                        dataclasses.replace(EMBEDDED_SFT, max_steps=1, max_length=512))
    assert metrics["steps"] == 1 and metrics["loss"] and metrics["loss"][0][1] > 0

    rl = [rl_record(f"t{i}", t.name, t.source, t.source, "", "brief") for i, t in enumerate(tasks)]
    hyper = dataclasses.replace(EMBEDDED_GRPO, max_steps=1, max_new_tokens=6, max_retries=1, learning_rate=0.05)
    scorer = LengthReward()
    result = train_grpo(str(tmp_path / "sft"), rl, tmp_path / "rl", hyper, scorer)  # type: ignore[arg-type]
    assert result["steps"] == 1 and result["rollouts"] == 4
    assert scorer.evaluations >= 4 and result["evaluations_per_min"] > 0 and len(result["reward"]) == 1
    before, after = load_file(tmp_path / "sft" / "model.safetensors"), load_file(tmp_path / "rl" / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before), "GRPO step changed no weight"

