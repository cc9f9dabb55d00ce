"""The seed preset at its real size on one GPU: Qwen2.5-Coder-14B's architecture built from its config (random
weights, no hub) in bf16 on the device, a few SFT steps with LoRA, then a few GRPO steps (4 generations,
multi-turn retries, rewards through the executor) through hipforge.train's own trainers. Reports peak memory,
seconds per step and generation tokens per second (JSON at OUT/preset_14b.json). The tokenizer is ours (BPE
trained on the reference library and its kernels); the embedding keeps the 14B's 152,064 rows.

Needs trl, datasets, peft (and their wheels: see scripts/train_flow_gpu.py; peft 0.21.2). Usage:
    python scripts/preset_14b_gpu.py --out $OUT                   # one H200, well within 10 minutes
    python scripts/preset_14b_gpu.py --out out/ --small --backend cpu   # the same code at 1/32 width, on CPU
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from hipforge.agents.base import AgentTask, Candidate  # noqa: E402
from hipforge.agents.translator.offline import OfflineTranslator  # noqa: E402
from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.tasks.library import load_library  # noqa: E402
from hipforge.train import grpo, hf, sft  # noqa: E402
from hipforge.train.base_model import CODER_14B, build_model  # noqa: E402
from hipforge.train.config import SEED_GRPO, SEED_SFT  # noqa: E402
from hipforge.train.flow_data import fitting  # noqa: E402
from hipforge.train.records import Record, rl_record, sft_record  # noqa: E402
from hipforge.train.reward import RewardRule  # noqa: E402
from hipforge.train.scoring import CandidateScorer  # noqa: E402
from hipforge.train.tokenizer import train_tokenizer  # noqa: E402

# the same architecture at 1/32 of the width and 2 of the 48 layers: 40:8 query to KV heads becomes 5:1
SMALL = dataclasses.replace(CODER_14B, hidden_size=160, num_hidden_layers=2, num_attention_heads=5,
                            num_key_value_heads=1, intermediate_size=432, model_vocab=4752)


def records(tasks: int) -> tuple[list[Record], list[Record]]:
    """SFT records (a library task -> the offline translator's kernel) and RL prompts, full system prompt."""
    sft_rows, rl_rows = [], []
    for task in load_library()[:tasks]:
        made = OfflineTranslator().translate(AgentTask(task.name, task.name, task.source), [])
        if isinstance(made, Candidate):
            sft_rows.append(sft_record(task.name, task.name, task.source, "", made.source, 1.0, "full"))
            rl_rows.append(rl_record(task.name, task.name, task.source, task.source, "", "full"))
    if not sft_rows:
        raise RuntimeError("the offline translator wrote no kernel for the library's first tasks")
    return sft_rows, rl_rows


def peak_gb(device: str) -> float | None:
    import torch

    if device != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated() / 2**30, 2)


def reset_peak(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--small", action="store_true", help="the scaled-down config (CPU plumbing)")
    p.add_argument("--backend", default="cuda")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--sft-steps", type=int, default=6)
    p.add_argument("--grpo-steps", type=int, default=3)
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--sft-max-length", type=int, default=3072, help="longer records are dropped")
    p.add_argument("--max-new-tokens", type=int, default=256, help="per turn; random weights never stop early")
    p.add_argument("--max-retries", type=int, default=1)
    p.add_argument("--tasks", type=int, default=24)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report = run(args)
    (args.out / "preset_14b.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "spec"}, indent=1), flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = "cuda" if torch.cuda.is_available() and not args.small else "cpu"
    spec = SMALL if args.small else CODER_14B
    sft_rows, rl_rows = records(args.tasks)
    tokenizer = train_tokenizer([m["content"] for r in sft_rows for m in r.prompt + r.completion], 8192)
    sft_rows = fitting(sft_rows, tokenizer, args.sft_max_length)
    if not sft_rows:
        raise SystemExit(f"no SFT record fits in {args.sft_max_length} tokens: raise --sft-max-length")
    started = time.monotonic()
    model = build_model(spec, tokenizer, device, "bf16" if device == "cuda" else "fp32")  # CPUs are slow at bf16
    report: dict[str, Any] = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
                              "spec": dataclasses.asdict(spec), "build_s": round(time.monotonic() - started, 1),
                              "parameters_b": round(sum(p.numel() for p in model.parameters()) / 1e9, 4),
                              "build_peak_gb": peak_gb(device), "sft_records": len(sft_rows)}

    reset_peak(device)
    timer = hf.step_timer()
    sft_hyper = dataclasses.replace(SEED_SFT, max_steps=args.sft_steps, max_length=args.sft_max_length,
                                    lora_rank=args.lora_rank, bf16=device == "cuda")
    trainer = sft.build_trainer(model, tokenizer, sft_rows, args.out / "sft", sft_hyper, callbacks=[timer])
    trainer.train()
    report["sft"] = {"steps": trainer.state.global_step, "step_s": timer.seconds, "peak_gb": peak_gb(device),
                     "loss": hf.curve(trainer.state.log_history, "loss"),
                     "trainable_m": round(sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
                                          / 1e6, 2),
                     # LoRA's B starts at zero: non-zero after SFT means gradients reached the adapters
                     "adapters_trained": any(bool(p.detach().abs().sum()) for n, p in trainer.model.named_parameters()
                                             if "lora_B" in n)}

    reset_peak(device)
    timer = hf.step_timer()
    # GRPO trains the SFT adapter on: the PeftModel goes in as it is, so no second LoRA config
    grpo_hyper = dataclasses.replace(SEED_GRPO, max_steps=args.grpo_steps, max_new_tokens=args.max_new_tokens,
                                     max_context=args.sft_max_length + 2 * args.max_new_tokens + 2048,
                                     max_retries=args.max_retries, lora_rank=0, bf16=device == "cuda")
    config = EvalConfig(backend=args.backend, arch=args.arch, time_compiled_ref=False)
    scorer = CandidateScorer(config, RewardRule(), parallel=4)
    gtrainer, rollout = grpo.build_trainer(trainer.model, tokenizer, rl_rows, args.out / "rl", grpo_hyper, scorer,
                                           callbacks=[timer])
    gtrainer.train()
    metrics = grpo.run_metrics(gtrainer, rollout, scorer, sum(timer.seconds))
    report["grpo"] = {"steps": gtrainer.state.global_step, "step_s": timer.seconds, "peak_gb": peak_gb(device),
                      "generated_tokens": rollout.generated_tokens, "generation_s": round(rollout.generation_s, 1),
                      "generation_tokens_per_s": round(rollout.generated_tokens / max(rollout.generation_s, 1e-9), 1),
                      "turns_per_step": [s["turns"] for s in rollout.steps], "evaluations": metrics["evaluations"],
                      "executor_evaluations": metrics["executor_evaluations"]}
    report["wall_s"] = round(time.monotonic() - started, 1)
    return report


if __name__ == "__main__":
    main()
