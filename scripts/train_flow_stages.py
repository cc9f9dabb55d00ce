"""The training flow's stages before GRPO (scripts/train_flow_gpu.py runs them): the records and tokenizer, the
executor check beside the sweep, and the sweep over model sizes with SFT of the chosen one; with the flow's
log lines. No Dagster, DuckDB or pydantic: it runs on the GPU machine."""

from __future__ import annotations

import argparse
import dataclasses
import threading
import time
from typing import Any

from hipforge.train import flow_data, hf
from hipforge.train.base_model import TinyQwen2, build_model
from hipforge.train.config import SFTHyper
from hipforge.train.scoring import CandidateScorer, Job
from hipforge.train.sweep import Size, sweep, train_boxed
from hipforge.train.tokenizer import train_tokenizer

SIZES = {  # heads of 64 dims, 2-4 KV heads, SwiGLU at ~2.7x
    "S": Size("S", TinyQwen2(384, 6, 6, 2, 1024, max_position_embeddings=4096), 2e-3),
    "M": Size("M", TinyQwen2(512, 8, 8, 2, 1408, max_position_embeddings=4096), 1.5e-3),
    "L": Size("L", TinyQwen2(768, 12, 12, 4, 2048, max_position_embeddings=4096), 1e-3),
    "T1": Size("T1", TinyQwen2(32, 1, 2, 1, 64, max_position_embeddings=1024), 5e-3),
    "T2": Size("T2", TinyQwen2(64, 2, 4, 2, 128, max_position_embeddings=1024), 3e-3),
}

def log(started: float, text: str) -> None:
    print(f"[{time.monotonic() - started:6.1f} s] {text}", flush=True)


def progress(started: float, stage: str, every: int) -> hf.LogFn:
    def report(step: int, _max: int, logs: dict[str, float]) -> None:
        if step % every == 0 and "loss" in logs:
            log(started, f"{stage} step {step}: loss {logs['loss']:.4f}")

    return report


def on_backend(args: argparse.Namespace, rl: list[Any], tasks: list[Any]) -> tuple[list[Any], list[Any]]:
    """On the cpu backend tasks run smoke-scaled (a record's own smoke variant where it carries one); GPUs run
    them at full size, as the prompts state them."""
    if args.backend != "cpu":
        return rl, tasks
    from hipforge.tasks import smoke_sources

    pending = [(r.task_id, r.task_source) for r in rl if r.eval_source == r.task_source]
    pending += [(t.name, t.source) for t in tasks if t.eval_source == t.source]
    smoke = smoke_sources(pending) if pending else {}
    return ([dataclasses.replace(r, eval_source=smoke.get(r.task_id, r.eval_source)) for r in rl],
            [dataclasses.replace(t, eval_source=smoke.get(t.name, t.eval_source)) for t in tasks])


@dataclasses.dataclass
class Data:
    tokenizer: Any
    train: list[Any]
    validation: list[Any]
    rl: list[Any]
    tasks: list[Any]
    max_new: int
    stats: dict[str, Any]


def prepare(args: argparse.Namespace) -> Data:
    """Records, the tokenizer (trained on the train split only), what fits, RL prompts and evaluation tasks."""
    corpus = flow_data.load_corpora(args.corpus)
    train_all = corpus.splits["train"]
    tokenizer = train_tokenizer([m["content"] for r in train_all for m in r.prompt + r.completion], args.vocab,
                                args.pretokenize)
    fits = flow_data.fitting(train_all, tokenizer, args.max_length)[:args.train_limit or None]
    train, rl_pool = flow_data.hold_for_rl(fits, args.rl_share)
    validation = flow_data.fitting(corpus.splits["validation"], tokenizer, args.max_length)[:args.validation]
    if not train or not validation:
        raise SystemExit(f"no train or validation pair fits in {args.max_length} tokens: raise --max-length")
    longest = max(len(flow_data.chat_tokens(tokenizer, r.completion, False)) for r in train)
    max_new = args.max_new_tokens or int(longest * 1.25)
    system = train[0].prompt[0]["content"]
    kb = flow_data.kernelbench_tasks(args.kernelbench, [1, 2], system, args.eval_tasks) if args.kernelbench else []
    own = {} if args.backend != "cpu" else {r.task_id: r.eval_source for r in fits + corpus.splits["heldout"]
                                            if r.eval_source}  # a cpu-built corpus verified at smoke sizes
    mixed = flow_data.grpo_mix(rl_pool, train, args.rl_seen)
    rl = flow_data.spread(flow_data.rl_prompts(mixed, own), args.rl_prompts)
    rl, tasks = on_backend(args, rl, flow_data.heldout_tasks(corpus.splits["heldout"], own, args.eval_tasks) + kb)
    stats = {"origin": corpus.origin, "train": len(train_all), "train_fitting": len(fits), "sft": len(train),
             "validation_fitting": len(validation), "rl_prompts": len(rl), "vocab": len(tokenizer),
             "longest_kernel_tokens": longest, "max_new_tokens": max_new,
             "eval_tasks": {s: sum(t.split == s for t in tasks) for s in sorted({t.split for t in tasks})}}
    return Data(tokenizer, train, validation, rl, tasks, max_new, stats)


def executor_check(scorer: CandidateScorer, data: Data, into: dict[str, Any]) -> threading.Thread:
    """A verified pair through the executor, in the background while the sweep trains: it must come back
    correct, and it builds the backend's shared runtime before GRPO needs it."""
    first = data.train[0]
    task = next((r for r in data.rl if r.task_id == first.task_id), None)
    job = Job(first.task_id, first.completion[0]["content"], task.eval_source if task else
              flow_data.task_source(first))

    def run() -> None:
        result = scorer([job])[0].result
        into.update({"task": first.task_name, "verdict": result.verdict.value, "message": result.message[:300]})

    thread = threading.Thread(target=run, name="executor-check")
    thread.start()
    return thread


def supervised(args: argparse.Namespace, data: Data, stats: dict[str, Any], started: float) -> tuple[Any, ...]:
    """The sweep, then the chosen size trained on: (size, trained model, its copy before GRPO, random init, SFT)."""
    hyper = SFTHyper(batch_size=args.batch_size, max_length=args.max_length, bf16=args.device == "cuda",
                     seed=args.seed, gradient_checkpointing=False)
    every = 10 if args.tiny else 100
    chosen, model, runs, tokenized = sweep([SIZES[s] for s in args.sizes.split(",")], data.tokenizer, data.train,
                                           data.validation, args.out / "work", hyper, args.sweep_seconds,
                                           args.device, progress(started, "sweep", every))
    stats["sweep"] = {"runs": runs, "chosen": chosen.name}
    log(started, "sweep: " + ", ".join(f"{r['size']} {r['parameters'] / 1e6:.1f}M {r['steps']} steps held-out "
                                       f"loss {r['validation_loss']}" for r in runs) + f"; chosen {chosen.name}")
    sft = train_boxed(model, data.tokenizer, data.train, data.validation, args.out / "work" / "sft",
                      dataclasses.replace(hyper, learning_rate=chosen.learning_rate / 2), args.sft_seconds,
                      on_log=progress(started, "sft", every), tokenized=tokenized)
    sft.pop("tokenized")
    sft["step_offset"] = next(r["steps"] for r in runs if r["size"] == chosen.name)
    stats["sft"] = {k: v for k, v in sft.items() if k != "loss"}
    log(started, f"sft: {sft['steps']} more steps, held-out loss {sft['validation_loss']}")
    kept = build_model(chosen.spec, data.tokenizer, args.device)
    kept.load_state_dict(model.state_dict())  # GRPO trains `model` in place
    base = build_model(chosen.spec, data.tokenizer, args.device)  # the same seed: the sweep's starting point
    return chosen, model, kept, base, sft
