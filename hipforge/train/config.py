"""Hyperparameters of both stages, with two presets: the seed's (Qwen2.5-Coder-14B: SFT 3 epochs, batch 2,
lr 2e-5; GRPO with 4 generations, 3 retries, a 100-reward smoothing window at 1.5 σ, a 3× cap) and the
embedded one, which makes a tiny model learn the shape of a kernel in seconds on two CPU cores."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class SFTHyper:
    epochs: float = 3.0
    max_steps: int = -1  # > 0 overrides epochs
    batch_size: int = 2
    learning_rate: float = 2e-5
    max_length: int = 8192  # prompt + kernel tokens; longer ones lose the kernel's end
    lora_rank: int = 0  # 0: full fine-tuning
    bf16: bool = True
    seed: int = 0
    cpu_threads: int = 0  # torch threads on CPU (0: torch's default); 1 is fastest on a shared machine
    gradient_checkpointing: bool = True  # memory for a 14B model, time for a tiny one
    lr_scheduler: str = "linear"  # transformers' lr_scheduler_type
    warmup_steps: int = 0
    completion_only_loss: bool = True  # False: a model trained from scratch also learns the prompts' language


@dataclass(frozen=True)
class GRPOHyper:
    num_generations: int = 4  # candidates per prompt (the GRPO group)
    prompts_per_step: int = 1
    max_steps: int = 200
    learning_rate: float = 1e-6
    max_new_tokens: int = 4096  # per turn
    max_context: int = 16384  # a trajectory stops retrying before its context passes this
    temperature: float = 1.0
    max_retries: int = 3  # a failed candidate gets its error and attempt back, up to this many more tries
    feedback_chars: int = 1500  # of the compiler log or traceback shown back
    smoothing_window: int = 100
    smoothing_sigmas: float = 1.5
    reward_cap: float = 3.0
    correct_bonus: float = 0.0
    coverage_weight: float = 0.0
    lora_rank: int = 0
    bf16: bool = True
    seed: int = 0
    cpu_threads: int = 0
    gradient_checkpointing: bool = True
    eval_parallel: int = 2  # candidates in the executor at once


SEED_SFT, SEED_GRPO = SFTHyper(), GRPOHyper()
# 60 steps at lr 3e-3 on 512-token sequences: the tiny model's samples open with the archive's includes,
# `os.environ["CXX"] = "hipcc"` and `__forceinline__` helpers (loss ~7.6 -> ~3.0, ~25 s on one core).
EMBEDDED_SFT = SFTHyper(max_steps=60, learning_rate=3e-3, max_length=512, bf16=False, cpu_threads=1,
                        gradient_checkpointing=False)
EMBEDDED_GRPO = GRPOHyper(max_steps=2, learning_rate=1e-3, max_new_tokens=96, max_context=2048, max_retries=1,
                          feedback_chars=300, bf16=False, cpu_threads=1, gradient_checkpointing=False)
PRESETS: dict[str, tuple[SFTHyper, GRPOHyper]] = {"embedded": (EMBEDDED_SFT, EMBEDDED_GRPO),
                                                  "seed": (SEED_SFT, SEED_GRPO)}


def preset(name: str, stage: str, overrides: dict[str, Any] | None = None) -> Any:
    """The preset's hyperparameters for a stage ('sft' | 'grpo'), with the non-None overrides applied."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: choose one of {sorted(PRESETS)}")
    base = PRESETS[name][0 if stage == "sft" else 1]
    known = {f.name for f in fields(base)}
    unknown = sorted(k for k, v in (overrides or {}).items() if v is not None and k not in known)
    if unknown:
        raise ValueError(f"{stage} has no hyperparameter(s) {unknown}")
    return replace(base, **{k: v for k, v in (overrides or {}).items() if v is not None})
