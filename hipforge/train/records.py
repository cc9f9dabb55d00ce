"""SFT and RL records in chat format, and their export as a Hugging Face dataset (parquet and JSON lines).

SFT: system + task prompt -> a verified kernel (the completion). Multi-turn SFT (a fix): the same prompt followed
by a failed attempt (an assistant turn) and the verifier's feedback (a user turn, worded as the RL rollout feeds
it back), then the verified kernel as the completion: the completion-only loss trains on the fix alone, never on
the failed attempt or the feedback. RL: the same prompt with the summarizer's lessons, plus what the executor
needs to score a candidate (the task source at the backend's size). Record ids are content hashes, so
re-building the same archive yields the same records."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hipforge.agents.base import Feedback
from hipforge.agents.prompts import TRANSLATOR_SYSTEM, feedback_prompt, task_prompt

Messages = list[dict[str, str]]
# The full system prompt carries a worked example (~1000 tokens for a small tokenizer): the embedded preset's
# tiny model trains on short sequences, so its records use the instructions alone.
SYSTEM_PROMPTS = {
    "full": TRANSLATOR_SYSTEM,
    "brief": "You write HIP kernels for AMD GPUs in KernelBench's HIP format: given a PyTorch `Model`, write "
             "`ModelNew` doing the same work in your own HIP kernel(s).",
}


@dataclass(frozen=True)
class Record:
    record_id: str
    kind: str  # sft | rl
    task_id: str
    task_name: str
    prompt: Messages
    completion: Messages  # sft: the verified kernel; rl: empty (the policy writes it)
    kernel_id: str = ""  # sft: the kernel it teaches
    task_source: str = ""  # rl: the full-size source kernels are written for
    eval_source: str = ""  # rl: what the chosen backend runs (the smoke variant on cpu)
    speedup: float = 0.0  # sft: the kernel's measured speedup over eager
    lessons: str = ""
    group: str = ""  # the held-out combination the task belongs to (splits.holdout_key)
    feedback_turns: int = 0  # multi-turn sft: failed attempts (each with its feedback) in the prompt

    def row(self) -> dict[str, Any]:
        return asdict(self)


def _id(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def chat_prompt(task_source: str, lessons: str = "", system: str = "full") -> Messages:
    if system not in SYSTEM_PROMPTS:
        raise ValueError(f"unknown system prompt {system!r}: choose one of {sorted(SYSTEM_PROMPTS)}")
    return [{"role": "system", "content": SYSTEM_PROMPTS[system]},
            {"role": "user", "content": task_prompt(task_source, lessons)}]


def sft_record(task_id: str, task_name: str, task_source: str, kernel_id: str, kernel_source: str,
               speedup: float, system: str = "full") -> Record:
    if "ModelNew" not in kernel_source:
        raise ValueError(f"kernel {kernel_id} for {task_name} defines no ModelNew: not a KernelBench candidate")
    prompt = chat_prompt(task_source, system=system)
    return Record(_id("sft", task_id, kernel_id, system), "sft", task_id, task_name, prompt,
                  [{"role": "assistant", "content": kernel_source}], kernel_id=kernel_id, speedup=speedup)


def fix_record(task_id: str, task_name: str, task_source: str, attempt: Feedback, kernel_id: str,
               kernel_source: str, speedup: float, system: str = "full", group: str = "") -> Record:
    """task -> failed attempt -> the verifier's feedback -> the verified kernel (the only trained turn)."""
    if attempt.verdict == "correct":
        raise ValueError(f"a fix record for {task_name} needs a failed attempt, not a correct one")
    base = sft_record(task_id, task_name, task_source, kernel_id, kernel_source, speedup, system)
    prompt = [*base.prompt, {"role": "assistant", "content": attempt.source},
              {"role": "user", "content": feedback_prompt(attempt)}]
    rid = _id("sft-fix", task_id, kernel_id, system, attempt.source, attempt.message)
    return Record(rid, "sft", task_id, task_name, prompt, base.completion, kernel_id=kernel_id, speedup=speedup,
                  group=group, feedback_turns=1)


def content_keys(record: Record) -> tuple[str, str]:
    """(hash of the prompt: every turn before the trained one, a fix's failed attempt and feedback included; hash
    of what the assistant wrote: every assistant turn), each within single- or multi-turn records."""
    wrote = [m["content"] for m in [*record.prompt, *record.completion] if m["role"] == "assistant"]
    shape = f"{record.kind}/{record.feedback_turns}"
    return _id("prompt", shape, json.dumps(record.prompt, sort_keys=True)), _id("wrote", shape, *wrote)


def dedupe(records: Sequence[Record]) -> tuple[list[Record], int]:
    """The first record of every prompt and of every completion (content hashes, see content_keys), in order;
    and how many were dropped."""
    seen: set[str] = set()
    kept = []
    for record in records:
        keys = content_keys(record)
        if not seen.intersection(keys):
            kept.append(record)
        seen.update(keys)
    return kept, len(records) - len(kept)


def rl_record(task_id: str, task_name: str, task_source: str, eval_source: str, lessons: str,
              system: str = "full") -> Record:
    prompt = chat_prompt(task_source, lessons, system)
    return Record(_id("rl", task_id, lessons, system), "rl", task_id, task_name, prompt, [],
                  task_source=task_source, eval_source=eval_source or task_source, lessons=lessons)


def snapshot_id(records: Sequence[Record]) -> str:
    """Names a data snapshot by the records in it: the same records, the same snapshot."""
    return snapshot_of_ids([r.record_id for r in records])


def snapshot_of_ids(record_ids: Sequence[str]) -> str:
    """The snapshot id of records known by their ids alone (a checkpoint's training set)."""
    if not record_ids:
        raise ValueError("an empty set of records is not a data snapshot: the archive gave nothing to train on")
    return _id(*sorted(record_ids))


def export(records: Sequence[Record], out_dir: Path, name: str) -> dict[str, str]:
    """Write `name`.parquet (via datasets) and `name`.jsonl; returns their paths."""
    from datasets import Dataset

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [r.row() for r in records]
    parquet, jsonl = out_dir / f"{name}.parquet", out_dir / f"{name}.jsonl"
    Dataset.from_list(rows).to_parquet(str(parquet))
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return {"parquet": str(parquet), "jsonl": str(jsonl)}


def load_jsonl(path: Path) -> list[Record]:
    """Records back from an export (the GPU script trains from one without the warehouse)."""
    if not path.exists():
        raise FileNotFoundError(f"no records at {path}: materialize sft_records / rl_records first")
    return [Record(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
