"""GRPO with TRL's GRPOTrainer: multi-turn rollouts through rollout_func, TRLOO advantages per token (each
model turn its own), feedback tokens masked out of the loss (env_mask), no KL reference (beta 0)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hipforge.train import base_model, hf
from hipforge.train.config import GRPOHyper
from hipforge.train.records import Record
from hipforge.train.rollout import MultiTurnRollout
from hipforge.train.scoring import CandidateScorer
from hipforge.train.trloo import grpo_scaled


def trloo_trainer_class() -> type:
    """GRPOTrainer whose advantages are replaced by the rollout's per-token TRLOO advantages."""
    import torch
    from trl import GRPOTrainer

    class TRLOOTrainer(GRPOTrainer):
        def __init__(self, *args: Any, rollout: MultiTurnRollout, **kwargs: Any) -> None:
            self.rollout = rollout
            super().__init__(*args, rollout_func=rollout, **kwargs)

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            output = super()._generate_and_score_completions(inputs)
            width = output["completion_ids"].shape[1]
            output["advantages"] = torch.tensor(self.rollout.token_advantages(width),
                                                device=output["completion_ids"].device)
            return output

    return TRLOOTrainer


def first_turn_reward(num_generations: int) -> Any:
    """The reward TRL sees (and logs): the first turn's return, scaled by G/(G−1), so that TRL's own
    group-mean advantage with scale_rewards="none" equals the TRLOO advantage of the first turn."""

    def trloo_return(completions: list[Any], turn_return: list[float], **_: Any) -> list[float]:
        return grpo_scaled(turn_return, num_generations)

    return trloo_return


def build_trainer(model: Any, tokenizer: Any, records: Sequence[Record], out_dir: Path, hyper: GRPOHyper,
                  scorer: CandidateScorer, on_log: hf.LogFn | None = None,
                  callbacks: Sequence[Any] = ()) -> tuple[Any, MultiTurnRollout]:
    """The TRLOO trainer over a loaded model (a path's, or one built in memory) and its rollout."""
    from datasets import Dataset
    from trl import GRPOConfig

    if not records or any(r.kind != "rl" for r in records):
        raise ValueError("GRPO needs at least one record, all of kind 'rl'")
    hf.checkpointing_inputs(model, hyper.lora_rank > 0, hyper.gradient_checkpointing)
    rollout = MultiTurnRollout(tokenizer, records, scorer, hyper)
    data = Dataset.from_list([{"prompt": r.prompt, "task_id": r.task_id} for r in records])
    args = GRPOConfig(
        num_generations=hyper.num_generations, per_device_train_batch_size=hyper.num_generations *
        hyper.prompts_per_step, gradient_accumulation_steps=1, max_steps=hyper.max_steps,
        learning_rate=hyper.learning_rate, max_completion_length=hyper.max_new_tokens,
        temperature=hyper.temperature, scale_rewards="none", beta=0.0, num_iterations=1,
        **hf.common_args(str(out_dir / "trainer"), hyper.bf16, hyper.seed, hyper.gradient_checkpointing),
    )
    trainer = trloo_trainer_class()(
        model=model, args=args, train_dataset=data, processing_class=tokenizer, rollout=rollout,
        reward_funcs=[first_turn_reward(hyper.num_generations)], peft_config=hf.lora_config(hyper.lora_rank),
        callbacks=[hf.log_callback(on_log), *callbacks])
    return hf.quiet(trainer), rollout


def train_grpo(model_path: str, records: Sequence[Record], out_dir: Path, hyper: GRPOHyper,
               scorer: CandidateScorer, on_log: hf.LogFn | None = None) -> dict[str, Any]:
    """Train, save model and tokenizer to out_dir; returns metrics (loss and reward curves, throughput)."""
    hf.set_threads(hyper.cpu_threads)
    dtype = "bf16" if hyper.bf16 and hf.device() == "cuda" else "fp32"
    model, tokenizer = base_model.load(model_path, hf.device(), dtype)
    trainer, rollout = build_trainer(model, tokenizer, records, out_dir, hyper, scorer, on_log)
    started = time.monotonic()
    trainer.train()
    seconds = time.monotonic() - started
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    return {**run_metrics(trainer, rollout, scorer, seconds), "records": len(records),
            "hyperparameters": asdict(hyper)}


def run_metrics(trainer: Any, rollout: MultiTurnRollout, scorer: CandidateScorer, seconds: float) -> dict[str, Any]:
    """Loss and reward curves, per-step stats and throughput of a finished (or time-boxed) run."""
    minutes = max(seconds, 1e-9) / 60
    return {"loss": hf.curve(trainer.state.log_history, "loss"),
            "reward": [(i + 1, s["reward_mean"]) for i, s in enumerate(rollout.steps)],
            "steps": trainer.state.global_step, "seconds": round(seconds, 2), "rollouts": rollout.rollouts,
            "evaluations": scorer.evaluations, "executor_evaluations": scorer.executor_evaluations,
            "rollouts_per_min": round(rollout.rollouts / minutes, 2),
            "evaluations_per_min": round(scorer.evaluations / minutes, 2),
            "generation_s": round(rollout.generation_s, 2), "generated_tokens": rollout.generated_tokens,
            "evaluation_s": round(scorer.seconds, 2), "smoothing_clipped": rollout.smoother.clipped,
            "per_step": rollout.steps}
