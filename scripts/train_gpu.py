"""The training code of the rl_checkpoint asset on a GPU: the tiny Qwen2 (tokenizer trained on the records),
SFT, then GRPO with TRLOO and multi-turn retries, rewards from the cuda executor backend. Prints and writes
(--out, JSON) rollouts and reward evaluations per minute. No Dagster, no DuckDB: records come from the
sft_records / rl_records exports (warehouse/exports, carried over), candidates go to a JSON-lines file.
Needs trl and datasets (carry .whl). Usage (GPU machine):
    python scripts/train_gpu.py --exports warehouse/exports --out $OUT/train_gpu.json --grpo-steps 5
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.pool import make_pool  # noqa: E402
from hipforge.execution.verdict import EvalResult  # noqa: E402
from hipforge.train import base_model  # noqa: E402
from hipforge.train.config import EMBEDDED_GRPO, EMBEDDED_SFT  # noqa: E402
from hipforge.train.grpo import train_grpo  # noqa: E402
from hipforge.train.records import Record, load_jsonl  # noqa: E402
from hipforge.train.reward import RewardRule  # noqa: E402
from hipforge.train.scoring import CandidateScorer  # noqa: E402
from hipforge.train.sft import train_sft  # noqa: E402


def newest(exports: Path, kind: str) -> Path:
    found = sorted((exports / kind).glob(f"*/{kind}.jsonl"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"no {kind} records under {exports / kind}: materialize {kind}_records and carry "
                                f"the exports folder")
    return found[-1]


class FileRecorder:
    """Every scored candidate as one JSON line (the archive's role where there is no warehouse)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("")

    def __call__(self, task_id: str, source: str, result: EvalResult, parent: str | None, step: int) -> str:
        from hipforge.execution.record import kernel_id

        kid = kernel_id(source)
        row = {"kernel_id": kid, "task_id": task_id, "parent": parent, "step": step, "verdict": result.verdict.value,
               "message": result.message[:500], "speedup_eager": result.speedup_eager, "seconds": result.seconds}
        with self.path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        return kid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", type=Path, default=Path("warehouse/exports"))
    parser.add_argument("--out", type=Path, required=True, help="JSON report; candidates.jsonl goes beside it")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--hidden-size", type=int, default=256, help="the tiny Qwen2's width (embedded default: 64)")
    parser.add_argument("--layers", type=int, default=4, help="its depth (embedded default: 2)")
    parser.add_argument("--context", type=int, default=8192, help="the tiny Qwen2's positions: a first turn and "
                        "its retries must fit")
    parser.add_argument("--sft-steps", type=int, default=1500)
    parser.add_argument("--sft-max-length", type=int, default=0, help="0: the longest record's tokens, so that no "
                        "kernel loses its end (a model that never sees one never closes its source string)")
    parser.add_argument("--grpo-steps", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=4096)
    parser.add_argument("--max-retries", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--parallel", type=int, default=8, help="candidates in the executor at once")
    parser.add_argument("--pool", choices=("inline", "local", "ray"), default="inline",
                        help="rewards from in-process evaluation, the local pool (a worker per GPU) or Ray")
    parser.add_argument("--ray-address", default="", help="with --pool ray: 'auto' joins a started cluster")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rank = int(os.environ.get("RANK", "0"))  # under `accelerate launch` each data-parallel rank writes its own files
    if rank:
        args.out = args.out.with_name(f"{args.out.stem}.rank{rank}{args.out.suffix}")
    work = args.out.parent / f"train_gpu.rank{rank}"

    sft = load_jsonl(newest(args.exports, "sft"))
    # the exports were built for the cpu backend (smoke sizes): on the GPU, candidates run at full size
    rl = [dataclasses.replace(r, eval_source=r.task_source) for r in load_jsonl(newest(args.exports, "rl"))]
    corpus = corpus_of(sft + rl)
    started = time.monotonic()
    spec = base_model.TinyQwen2(hidden_size=args.hidden_size, num_hidden_layers=args.layers,
                                intermediate_size=4 * args.hidden_size, max_position_embeddings=args.context)
    summary = base_model.build_tiny(corpus, work / "base", spec)
    longest = longest_record(str(work / "base"), sft)
    print(f"base: {summary['parameters']} parameters, tokenizer {summary['vocab']}, longest SFT record {longest} "
          f"tokens", flush=True)
    sft_hyper = dataclasses.replace(EMBEDDED_SFT, max_steps=args.sft_steps, max_length=args.sft_max_length or longest,
                                    bf16=False, cpu_threads=0)
    sft_metrics = train_sft(str(work / "base"), sft, work / "sft", sft_hyper, report("sft", 50))
    grpo_hyper = dataclasses.replace(EMBEDDED_GRPO, max_steps=args.grpo_steps, max_new_tokens=args.max_new_tokens,
                                     max_context=summary["max_position_embeddings"], max_retries=args.max_retries,
                                     temperature=args.temperature, eval_parallel=args.parallel, cpu_threads=0)
    recorder = FileRecorder(args.out.parent / f"candidates.rank{rank}.jsonl")
    config = EvalConfig(backend=args.backend, arch=args.arch)
    pool = None if args.pool == "inline" else make_pool(args.pool, config, args.parallel, args.ray_address)
    scorer = CandidateScorer(config, RewardRule(), args.parallel, recorder, pool)
    grpo = train_grpo(str(work / "sft"), rl, work / "rl", grpo_hyper, scorer, report("grpo", 1))
    result = {"device": device_name(), "sft": {k: v for k, v in sft_metrics.items() if k != "loss"},
              "sft_loss_first_last": [sft_metrics["loss"][0], sft_metrics["loss"][-1]],
              "grpo": grpo, "wall_s": round(time.monotonic() - started, 1)}
    args.out.write_text(json.dumps(result, indent=2, default=str))
    print(f"GRPO {grpo['steps']} steps in {grpo['seconds']} s: {grpo['rollouts_per_min']} rollouts/min, "
          f"{grpo['evaluations_per_min']} reward evaluations/min ({grpo['executor_evaluations']} of "
          f"{grpo['evaluations']} reached the {args.backend} executor; generation {grpo['generation_s']} s, "
          f"evaluation {grpo['evaluation_s']} s); report in {args.out}", flush=True)


def longest_record(tokenizer_dir: str, records: list[Record]) -> int:
    """Tokens of the longest chat (prompt and kernel) in the records, under the built tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    return max(len(tokenizer(tokenizer.apply_chat_template(r.prompt + r.completion, tokenize=False),
                             add_special_tokens=False)["input_ids"]) for r in records)


def corpus_of(records: list[Record]) -> list[str]:
    texts = {m["content"] for r in records for m in r.prompt + r.completion}
    return sorted(texts | {r.task_source for r in records if r.task_source})


def report(stage: str, every: int):
    def log(step: int, max_steps: int, logs: dict[str, float]) -> None:
        if step % every == 0 or step == max_steps:
            shown = {k: round(v, 4) for k, v in logs.items() if k in ("loss", "reward", "grad_norm", "step_time")}
            print(f"{stage} {step}/{max_steps} {shown}", flush=True)

    return log


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


if __name__ == "__main__":
    main()
