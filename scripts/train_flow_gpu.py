"""The whole training flow in one run, every stage boxed by the wall clock (defaults fit 10 minutes on one H200):
records -> tokenizer + a small Qwen2 from scratch (a sweep over sizes, the lowest held-out loss kept) -> SFT
(the chosen size trained on) -> GRPO with rewards from the executor through the evaluation pool -> base, SFT
and RL checkpoints evaluated on the held-out synthetic split and KernelBench L1 / L2 at real sizes (greedy with
a repetition guard, and pass@k over k samples; n says how many tasks were judged in time).

Writes ``--results`` (default OUT/training_h200.json: rows {checkpoint, split, compiled, correct, fast_1,
geomean, n, ...}), OUT/flow_stats.json (the sweep curve, SFT, GRPO per-step stats, timings), OUT/*.png and
OUT/answers.jsonl.gz (every greedy answer with its verdict).
No Dagster, DuckDB or pydantic. Wheels the GPU machine needs beyond torch / transformers / triton (the versions
tested here; ``pip install --no-deps *.whl``): trl 1.16.0, datasets 5.2.0, accelerate 1.15.0, pyarrow 26.0.1,
dill 0.4.1, multiprocess 0.70.19, xxhash 4.1.0, fsspec 2026.9.0, pandas 3.1.1 with python-dateutil 2.9.0.post0,
pytz 2026.6, tzdata 2026.6 and six 1.17.0; for the plots matplotlib 3.11.2 with contourpy 1.3.3, cycler 0.12.1,
fonttools 4.68.0, kiwisolver 1.5.1, pillow 13.0.0, pyparsing 3.3.3 (without it the JSON is still written); and
peft 0.21.2 for scripts/preset_14b_gpu.py.

    python scripts/train_flow_gpu.py --corpus CORPUS_DIR --kernelbench kernelbench_l1_l2a_l3.jsonl --out $OUT
    python scripts/train_flow_gpu.py --corpus CORPUS_DIR --kernelbench KB.jsonl --out out/ \\
        --device cpu --backend cpu --tiny      # the plumbing at toy scale on a CPU, a few minutes
CORPUS_DIR: scripts/build_corpus.py's output (train/validation/heldout.jsonl, or .jsonl.gz, + manifest.json) or
an exports folder (warehouse/exports, split here by task id).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")  # one bar per map, per trainer, in the log

import torch  # noqa: E402

from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.pool import make_pool  # noqa: E402
from hipforge.train import flow_data, flow_eval, hf  # noqa: E402
from hipforge.train.base_model import TinyQwen2, build_model  # noqa: E402
from hipforge.train.config import GRPOHyper, SFTHyper  # noqa: E402
from hipforge.train.grpo import build_trainer, run_metrics  # noqa: E402
from hipforge.train.reward import RewardRule  # noqa: E402
from hipforge.train.scoring import CandidateScorer, Job  # noqa: E402
from hipforge.train.sweep import BIG, Size, sweep, train_boxed  # noqa: E402
from hipforge.train.tokenizer import train_tokenizer  # noqa: E402

SIZES = {  # heads of 64 dims, 2-4 KV heads, SwiGLU at ~2.7x
    "S": Size("S", TinyQwen2(384, 6, 6, 2, 1024, max_position_embeddings=4096), 2e-3),
    "M": Size("M", TinyQwen2(512, 8, 8, 2, 1408, max_position_embeddings=4096), 1.5e-3),
    "L": Size("L", TinyQwen2(768, 12, 12, 4, 2048, max_position_embeddings=4096), 1e-3),
    "T1": Size("T1", TinyQwen2(32, 1, 2, 1, 64, max_position_embeddings=1024), 5e-3),
    "T2": Size("T2", TinyQwen2(64, 2, 4, 2, 128, max_position_embeddings=1024), 3e-3),
}
TINY = {"budget": 900, "sizes": "T1,T2", "vocab": 2048, "max_length": 512, "sweep_seconds": 15, "sft_seconds": 15,
        "grpo_seconds": 20, "eval_seconds": 60, "eval_tasks": 2, "samples": 2, "max_new_tokens": 48,
        "validation": 16, "train_limit": 200, "batch_size": 8, "slots": 2, "grpo_prompts": 1, "rl_prompts": 4,
        "timed_trials": 0}


def arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, nargs="+", required=True, help="one or more (shards of one build)")
    p.add_argument("--kernelbench", type=Path, help="KernelBench JSON lines (level, problem_id, name, code)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--results", type=Path, help="the rows' JSON (default OUT/training_h200.json)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--backend", default="cuda")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--tiny", action="store_true", help="toy scale for a CPU (overrides the defaults below)")
    p.add_argument("--sizes", default="S,M,L", help=f"of {', '.join(SIZES)}")
    p.add_argument("--vocab", type=int, default=16384)
    p.add_argument("--pretokenize", default="lines", help="lines | words (hipforge.train.tokenizer)")
    p.add_argument("--max-length", type=int, default=1024, help="longer pairs are dropped, never truncated")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--budget", type=float, default=560, help="seconds for the whole run: GRPO and evaluation "
                   "shrink their boxes to end within it")
    p.add_argument("--sweep-seconds", type=float, default=30, help="per size")
    p.add_argument("--sft-seconds", type=float, default=60, help="the chosen size, trained on")
    p.add_argument("--grpo-seconds", type=float, default=75)
    p.add_argument("--grpo-prompts", type=int, default=4, help="prompts per GRPO step (4 candidates each)")
    p.add_argument("--grpo-lr", type=float, default=5e-5)
    p.add_argument("--max-retries", type=int, default=1, help="the seed's 3 leave fewer steps in the box")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--eval-seconds", type=float, default=90, help="kept from GRPO for scoring the three "
                   "checkpoints' answers (the scoring takes whatever is left of the budget)")
    p.add_argument("--eval-tasks", type=int, default=12, help="per split, spread over it")
    p.add_argument("--samples", type=int, default=4, help="k of pass@k")
    p.add_argument("--max-new-tokens", type=int, default=0, help="0: 1.25 x the longest kept kernel")
    p.add_argument("--validation", type=int, default=256, help="validation records the held-out loss uses")
    p.add_argument("--train-limit", type=int, default=0, help="> 0: at most this many training records")
    p.add_argument("--rl-prompts", type=int, default=0, help="> 0: GRPO prompts from this many train tasks")
    p.add_argument("--rl-share", type=float, default=0.2, help="train tasks kept out of SFT for GRPO's prompts "
                   "(0: GRPO on SFT's own tasks)")
    p.add_argument("--rl-seen", type=float, default=0.5, help="share of GRPO's prompts from SFT's own tasks, "
                   "spread between the held-back ones")
    p.add_argument("--timed-trials", type=int, default=20, help="per evaluation (0: the backend's protocol, "
                   "100 on a GPU): the first run's GRPO step spent 192 s in 17 evaluations at 100")
    p.add_argument("--slots", type=int, default=8, help="evaluations in flight")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.tiny:
        for key, value in TINY.items():
            if getattr(args, key) == p.get_default(key):
                setattr(args, key, value)
    return args


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


def portable(value: Any) -> str:
    """An argument as the committed stats show it: a path relative to the checkout, or by its name only, so that no
    machine's directories end up in results/."""
    if isinstance(value, list):
        return str([portable(v) for v in value])
    if isinstance(value, Path) and value.is_absolute():
        inside = value.resolve().is_relative_to(Path.cwd())
        return str(value.resolve().relative_to(Path.cwd())) if inside else f".../{value.name}"
    return str(value)


def main() -> None:
    args = arguments()
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.results or args.out / "training_h200.json"
    stats: dict[str, Any] = {"args": {k: portable(v) for k, v in vars(args).items()}, "stages": {},
                             "executor_check": {}}

    def stage(name: str, since: float) -> float:
        stats["stages"][name] = round(time.monotonic() - since, 1)
        log(started, f"{name} done in {stats['stages'][name]} s")
        return time.monotonic()

    t = time.monotonic()
    data = prepare(args)
    stats["data"] = data.stats
    log(started, f"data: {json.dumps(data.stats)}")
    # no torch.compile baselines (inductor builds cost minutes), and tighter timeouts than the archive's: a
    # candidate that hangs must not outlast an evaluation box
    config = EvalConfig(backend=args.backend, arch=args.arch, time_compiled_ref=False, compile_timeout_s=90,
                        run_timeout_s=30, timed_trials=args.timed_trials or None)
    scorer = CandidateScorer(config, RewardRule(), args.slots, pool=make_pool("local", config, args.slots))
    check = executor_check(scorer, data, stats["executor_check"])
    t = stage("data and tokenizer", t)

    hf.set_threads(1 if args.device == "cpu" else 0)
    torch.backends.cuda.matmul.allow_tf32 = True  # weights stay fp32 (AdamW); generation runs in TF32
    chosen, model, sft_model, base, sft = supervised(args, data, stats, started)
    t = stage("sweep and sft", t)
    check.join()
    log(started, f"executor check: {json.dumps(stats['executor_check'])}")

    ghyper = GRPOHyper(num_generations=4, prompts_per_step=args.grpo_prompts, max_steps=BIG, learning_rate=args.grpo_lr,
                       max_new_tokens=data.max_new, max_context=chosen.spec.max_position_embeddings,
                       temperature=args.temperature, max_retries=args.max_retries, bf16=args.device == "cuda",
                       seed=args.seed, gradient_checkpointing=False, eval_parallel=args.slots)
    def left() -> float:
        return started + args.budget - time.monotonic()

    generation = 25.0  # seconds to generate one checkpoint's answers (measured at about that on the H200)
    # what the evaluation after it needs is kept from GRPO; its first step runs whatever is left (the wall clock
    # stops it before a step that would end past the box)
    box = max(0.0, min(args.grpo_seconds, left() - args.eval_seconds - 3 * generation))
    trainer, rollout = build_trainer(model, data.tokenizer, data.rl, args.out / "work" / "rl", ghyper, scorer,
                                     progress(started, "grpo", 1),
                                     callbacks=[hf.wall_clock(box, whole_steps=True)])
    grpo_started = time.monotonic()
    trainer.train()
    grpo = run_metrics(trainer, rollout, scorer, time.monotonic() - grpo_started)
    stats["grpo"] = {**{k: v for k, v in grpo.items() if k != "loss"}, "box_s": round(box, 1)}
    log(started, f"grpo: {grpo['steps']} steps, per step " + json.dumps(rollout.steps))
    t = stage("grpo", t)

    rows: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []

    def save() -> None:  # a run cut short by its call's limit keeps what it measured
        stats["wall_s"] = round(time.monotonic() - started, 1)
        stats["device"] = device_name(args.device)
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(rows, indent=1) + "\n")
        (args.out / "flow_stats.json").write_text(json.dumps(stats, indent=1, default=str) + "\n")
        with gzip.open(args.out / "answers.jsonl.gz", "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(a) + "\n" for a in answers)

    save()
    # every checkpoint's answers, then one scoring pass over all of them: the pool's slots stay full, and a
    # box that ends early has judged some tasks of every checkpoint and split
    scoring = max(10.0, left() - 3 * generation - 15.0)
    checkpoints = (("base", base), ("sft", sft_model), ("rl", trainer.model))
    rows, timing, answers = flow_eval.evaluate(checkpoints, data.tokenizer, data.tasks, scorer, scoring, data.max_new,
                                               args.samples, args.temperature, chosen.spec.max_position_embeddings)
    stats["eval"] = {**timing, "scoring_box_s": round(scoring, 1)}
    for r in rows:
        log(started, f"eval {r['checkpoint']}: {r['split']} n={r['n']} parsed {r['parsed']:.2f} compiled "
                     f"{r['compiled']:.2f} correct {r['correct']:.2f}")
    stage("eval", t)
    save()
    plots(args.out, stats["sweep"]["runs"], sft, rollout.steps, rows)
    log(started, f"wrote {results} and {args.out / 'flow_stats.json'}")


def plots(out: Path, runs: list[dict[str, Any]], sft: dict[str, Any], per_step: list[dict[str, float]],
          rows: list[dict[str, Any]]) -> None:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: no plots", flush=True)
        return
    from hipforge.train.flow_plots import eval_plot, grpo_plot, sweep_plot

    (out / "sweep.png").write_bytes(sweep_plot(runs, sft))
    (out / "eval.png").write_bytes(eval_plot(rows))
    png = grpo_plot(per_step)
    if png:
        (out / "grpo.png").write_bytes(png)


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(0) if device == "cuda" and torch.cuda.is_available() else "cpu"


if __name__ == "__main__":
    main()
