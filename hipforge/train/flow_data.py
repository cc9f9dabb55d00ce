"""What the training flow reads: SFT records per split from a corpus directory (scripts/build_corpus.py:
``train.jsonl``, ``validation.jsonl``, ``heldout.jsonl`` (or gzipped) and ``manifest.json``) or the
``sft_records`` / ``rl_records`` exports (split here by a hash of the task id); RL prompts from the train split;
and tasks to evaluate on (the held-out split, KernelBench from a JSON-lines file)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hipforge.train.records import Messages, Record, dedupe

SPLITS = ("train", "validation", "heldout")
_TASK_START, _TASK_END = "Reference to translate:\n", "\n\nWrite ModelNew now."


@dataclass(frozen=True)
class EvalTask:
    name: str
    split: str  # heldout_synthetic | kernelbench_l1 | kernelbench_l2
    prompt: Messages  # what the model is asked (system + task)
    source: str  # the task at full size
    eval_source: str  # what the backend runs


@dataclass(frozen=True)
class Corpus:
    splits: dict[str, list[Record]]  # train / validation / heldout, SFT records
    origin: str  # "corpus" (a build_corpus directory) or "exports"
    manifest: dict[str, Any]


def record_from(row: dict[str, Any]) -> Record:
    """A Record from a JSON row, ignoring fields this version of Record does not have."""
    known = {f.name for f in dataclasses.fields(Record)}
    return Record(**{k: v for k, v in row.items() if k in known})


def read_jsonl(path: Path) -> list[Record]:
    """Records from JSON lines, plain or gzipped (a corpus carried to a GPU machine travels smaller)."""
    text = gzip.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".gz" else \
        path.read_text(encoding="utf-8")
    return [record_from(json.loads(line)) for line in text.splitlines() if line.strip()]


def split_file(path: Path, split: str) -> Path | None:
    return next((p for p in (path / f"{split}.jsonl", path / f"{split}.jsonl.gz") if p.exists()), None)


def hash_split(task_id: str) -> str:
    """80 / 10 / 10 by task id, for exports that carry no split."""
    bucket = int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % 10
    return "heldout" if bucket == 0 else "validation" if bucket == 1 else "train"


def load_corpus(path: Path) -> Corpus:
    """A build_corpus directory (manifest.json beside one JSON-lines file per split) or an exports folder."""
    if (path / "manifest.json").exists():
        files = {s: split_file(path, s) for s in SPLITS}
        missing = [s for s, f in files.items() if f is None]
        if missing:
            raise FileNotFoundError(f"corpus {path} has a manifest but no {', '.join(missing)}.jsonl(.gz)")
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        return Corpus({s: read_jsonl(f) for s, f in files.items() if f}, "corpus", manifest)
    found = sorted((path / "sft").glob("*/sft.jsonl"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"{path} is neither a corpus directory (manifest.json, train/validation/heldout"
                                f".jsonl from scripts/build_corpus.py) nor an exports folder "
                                f"(sft/<snapshot>/sft.jsonl)")
    records = read_jsonl(found[-1])
    rl = sorted((path / "rl").glob("*/rl.jsonl"), key=lambda p: p.stat().st_mtime)
    sources = {r.task_id: r.task_source for r in read_jsonl(rl[-1])} if rl else {}
    records = [dataclasses.replace(r, task_source=r.task_source or sources.get(r.task_id, "")) for r in records]
    splits: dict[str, list[Record]] = {s: [] for s in SPLITS}
    for r in records:
        splits[hash_split(r.task_id)].append(r)
    return Corpus(splits, "exports", {"exports": str(found[-1])})


def load_corpora(paths: Sequence[Path]) -> Corpus:
    """Several corpora as one (shards of one build verified on different machines): splits concatenated and
    deduplicated again; a record keeps the split its build gave it, so shards of one task file agree."""
    parts = [load_corpus(p) for p in paths]
    if len(parts) == 1:
        return parts[0]
    splits = {s: dedupe([r for c in parts for r in c.splits.get(s, [])])[0] for s in SPLITS}
    return Corpus(splits, "+".join(sorted({c.origin for c in parts})), {"parts": [c.manifest for c in parts]})


def task_source(record: Record) -> str:
    """The full-size task of a record: its own field, else read back out of its first user turn."""
    if record.task_source:
        return record.task_source
    text = next(m["content"] for m in record.prompt if m["role"] == "user")
    if not text.startswith(_TASK_START):
        raise ValueError(f"record {record.record_id} carries no task_source and its prompt names no task")
    body = text[len(_TASK_START):]
    end = body.rfind(_TASK_END)
    return body[:end] if end >= 0 else body


def first_turn(record: Record) -> Messages:
    """The prompt up to the first model turn (a fix record's failed attempt and feedback dropped)."""
    return [m for m in record.prompt if m["role"] == "system"][:1] + \
        [next(m for m in record.prompt if m["role"] == "user")]


def per_task(records: Sequence[Record]) -> list[Record]:
    """One record per task, in order of first appearance."""
    seen: dict[str, Record] = {}
    for r in records:
        seen.setdefault(r.task_id, r)
    return list(seen.values())


def rl_prompts(records: Sequence[Record], eval_sources: dict[str, str]) -> list[Record]:
    """RL records (kind rl) for GRPO, one per task of the SFT records: the first-turn prompt, the task at full
    size, and what the backend runs (eval_sources by task id; the full size where absent)."""
    out = []
    for r in per_task(records):
        source = task_source(r)
        out.append(Record(f"rl-{r.record_id}", "rl", r.task_id, r.task_name, first_turn(r), [],
                          task_source=source, eval_source=eval_sources.get(r.task_id, source)))
    return out


def hold_for_rl(records: Sequence[Record], share: float) -> tuple[list[Record], list[Record]]:
    """(SFT's records, GRPO's) with a share of the training tasks, by task id, kept out of SFT for GRPO: on
    tasks it trained on, SFT reproduces the verified kernel, every group of 4 is all correct, and TRLOO's
    advantages are zero (the first H200 run: 16 of 16 correct, no mixed group)."""
    def for_rl(task_id: str) -> bool:
        return int(hashlib.sha256(f"rl/{task_id}".encode()).hexdigest()[:8], 16) % 1000 < share * 1000

    return [r for r in records if not for_rl(r.task_id)], [r for r in records if for_rl(r.task_id)]


def grpo_mix(held_back: Sequence[Record], seen: Sequence[Record], seen_share: float) -> list[Record]:
    """GRPO's records, one per task: every held-back task, with tasks SFT trained on spread between them at
    ``seen_share`` of the whole. Held-back tasks alone may leave every reward at zero while SFT's model does not
    generalize yet; its own tasks keep the reward off zero, and the held-back ones carry the mixed groups."""
    unseen = per_task(held_back)
    if not unseen or seen_share <= 0:
        return unseen or per_task(seen)
    mixed = spread(per_task(seen), round(len(unseen) * seen_share / (1 - seen_share)))
    placed = [(i / len(unseen), r) for i, r in enumerate(unseen)]
    placed += [((j + 0.5) / len(mixed), r) for j, r in enumerate(mixed)]
    return [r for _, r in sorted(placed, key=lambda p: p[0])]


def heldout_tasks(records: Sequence[Record], eval_sources: dict[str, str], n: int) -> list[EvalTask]:
    """n held-out tasks (0: all), spread over the split; eval_sources by task id, the full size where absent."""
    return [EvalTask(r.task_name, "heldout_synthetic", first_turn(r), task_source(r),
                     eval_sources.get(r.task_id, task_source(r))) for r in spread(per_task(records), n)]


def spread(items: Sequence[Any], n: int) -> list[Any]:
    """n items evenly spaced over the sequence (all of them when n <= 0 or n >= len): a sample that is not
    just the first problems of a level (KernelBench L1 opens with sixteen matrix products)."""
    if n <= 0 or n >= len(items):
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def kernelbench_tasks(path: Path, levels: Sequence[int], system: str, n: int) -> list[EvalTask]:
    """n KernelBench problems of each level (0: all) from a JSON-lines file, spread over the level, asked with
    the training records' system prompt; they run at their real sizes (eval_source is the source)."""
    from hipforge.agents.prompts import task_prompt
    from hipforge.bench.kernelbench import load_kernelbench

    problems = load_kernelbench(str(path), list(levels))
    out = []
    for level in levels:
        mine = [p for p in problems if p.level == level]
        if not mine:
            raise ValueError(f"{path} holds no KernelBench level {level} problem")
        for p in spread(mine, n):
            prompt = [{"role": "system", "content": system}, {"role": "user", "content": task_prompt(p.source)}]
            out.append(EvalTask(p.task_name, f"kernelbench_l{level}", prompt, p.source, p.source))
    return out


def chat_tokens(tokenizer: Any, messages: Messages, generation_prompt: bool) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def fitting(records: Sequence[Record], tokenizer: Any, max_length: int) -> list[Record]:
    """The records whose whole chat (prompt and kernel) fits: a kernel cut short would teach the model never to
    close its source string, so pairs that do not fit are dropped, not truncated."""
    return [r for r in records if len(chat_tokens(tokenizer, r.prompt + r.completion, False)) <= max_length]
