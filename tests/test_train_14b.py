"""The 14B preset's code path at 1/32 width on CPU: LoRA SFT with gradient checkpointing, then GRPO on the same
adapter with multi-turn retries, through scripts/preset_14b_gpu.py."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from hipforge.paths import REPO_ROOT


def test_small_preset_runs_lora_sft_then_multi_turn_grpo(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("preset_14b_gpu", REPO_ROOT / "scripts" / "preset_14b_gpu.py")
    assert spec and spec.loader
    preset = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(preset)
    args = argparse.Namespace(out=tmp_path, small=True, backend="cpu", arch="sm_90", sft_steps=1, grpo_steps=1,
                              lora_rank=4, sft_max_length=3072, max_new_tokens=6, max_retries=1, tasks=8)
    report = preset.run(args)
    assert report["spec"]["num_attention_heads"] // report["spec"]["num_key_value_heads"] == 5  # the 14B's 40:8
    assert report["sft"]["steps"] == 1 and len(report["sft"]["step_s"]) == 1
    assert 0 < report["sft"]["trainable_m"] < report["parameters_b"] * 1e3 / 10, "LoRA should train a small share"
    assert report["sft"]["adapters_trained"], "under gradient checkpointing no gradient reached the adapters"
    grpo = report["grpo"]
    assert grpo["steps"] == 1 and grpo["generated_tokens"] > 0 and grpo["generation_tokens_per_s"] > 0
    # random weights fail every candidate, so each of the 4 generations retries once: 8 turns
    assert grpo["turns_per_step"] == [8] and grpo["evaluations"] == 8
