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
import gzip
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")  # one bar per map, per trainer, in the log

import torch  # noqa: E402

from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.pool import make_pool  # noqa: E402
from hipforge.train import flow_eval, hf  # noqa: E402
from hipforge.train.config import GRPOHyper  # noqa: E402
from hipforge.train.grpo import build_trainer, run_metrics  # noqa: E402
from hipforge.train.reward import RewardRule  # noqa: E402
from hipforge.train.scoring import CandidateScorer  # noqa: E402
from hipforge.train.sweep import BIG  # noqa: E402
from scripts.train_flow_stages import SIZES, executor_check, log, prepare, progress, supervised  # noqa: E402

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
