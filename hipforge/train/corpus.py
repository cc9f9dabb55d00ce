"""Build a verified SFT corpus: synthesize tasks, split them, translate and evolve offline, verify every
kernel with the executor, add multi-turn fix records, deduplicate, and write one export per split.

Output directory (what training reads):

- ``train.jsonl``, ``validation.jsonl``, ``heldout.jsonl`` (and ``.parquet`` of each, the same rows): one
  ``hipforge.train.records.Record`` as a dict per line, all of kind ``sft``. ``prompt`` is the chat up to the
  trained turn, ``completion`` the verified kernel (the only turn the loss covers). A multi-turn record
  (``feedback_turns`` 1) has a failed attempt (assistant) and the verifier's feedback (user, as
  ``hipforge.agents.prompts.feedback_prompt`` words it in RL rollouts) at the end of its prompt.
  ``task_source`` is the full-size task, ``eval_source`` what the backend that verified it runs, ``group``
  the held-out combination, ``speedup`` the verified kernel's speedup over eager on that backend.
- ``manifest.json``: counts per stage and mode, split sizes, each split's data snapshot id
  (``records.snapshot_id``: a hash of the sorted record ids), seconds per stage and the configuration.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from hipforge.execution.pool.base import EvalPool
from hipforge.execution.record import kernel_id
from hipforge.train.corpus_kernels import (
    CorpusTask,
    Fix,
    TaskKernels,
    corrupted_fixes,
    real_fixes,
    translate_and_verify,
)
from hipforge.train.corpus_tasks import CorpusConfig, Log, Stages, synthesize_tasks
from hipforge.train.records import Record, dedupe, export, fix_record, sft_record, snapshot_id
from hipforge.train.splits import SPLITS, KernelBenchGuard


def _record(tk: TaskKernels, config: CorpusConfig, fix: Fix | None = None) -> Record:
    best = tk.best()
    assert best is not None  # only tasks with a verified kernel make records
    t, speedup = tk.task, best.result.speedup_eager or 0.0
    kid = kernel_id(best.source)
    if fix is None:
        record = sft_record(t.task_id, t.name, t.source, kid, best.source, speedup, config.system)
    else:
        record = fix_record(t.task_id, t.name, t.source, fix.attempt, kid, best.source, speedup, config.system)
    return replace(record, task_source=t.source, eval_source=t.eval_source, group=t.group)


def _failure_examples(kernels: Sequence[TaskKernels], per_verdict: int = 3) -> dict[str, list[str]]:
    """A few messages of each failing verdict: what a box far from here failed on, readable in its manifest."""
    examples: dict[str, list[str]] = {}
    for name, a in ((k.task.name, a) for k in kernels for a in k.attempts if not a.correct):
        said = examples.setdefault(a.result.verdict.value, [])
        if len(said) < per_verdict:
            said.append(f"{name} ({a.how}): {a.result.message[:300]}")
    return examples


def _median(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    return round(ordered[len(ordered) // 2], 3) if ordered else None


def build_records(kernels: Sequence[TaskKernels], fixes: Sequence[Fix], config: CorpusConfig,
                  stages: Stages) -> dict[str, list[Record]]:
    verified = [tk for tk in kernels if tk.best() is not None]
    single = [_record(tk, config) for tk in verified]
    multi = [_record(f.kernels, config, f) for f in fixes]
    kept, dropped = dedupe(single + multi)
    stages.counts["records"] = {"single_turn": sum(r.feedback_turns == 0 for r in kept),
                                "multi_turn": sum(r.feedback_turns > 0 for r in kept), "duplicates_dropped": dropped}
    split_of = {tk.task.task_id: tk.task.split for tk in kernels}
    return {s: [r for r in kept if split_of[r.task_id] == s] for s in SPLITS}


def write(out: Path, by_split: dict[str, list[Record]], manifest: dict[str, Any]) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    manifest["splits"] = {}
    for split, rows in by_split.items():
        if not rows:
            manifest["splits"][split] = {"records": 0, "snapshot": None}
            continue
        paths = export(rows, out, split)
        manifest["splits"][split] = {"records": len(rows), "snapshot": snapshot_id(rows),
                                     "multi_turn": sum(r.feedback_turns > 0 for r in rows),
                                     "tasks": len({r.task_id for r in rows}), **{k: Path(v).name
                                                                               for k, v in paths.items()}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    return manifest


def build_corpus(config: CorpusConfig, guard: KernelBenchGuard, pool: EvalPool, out: Path,
                 log: Log = lambda _: None, synthesized: tuple[list[CorpusTask], Stages] | None = None
                 ) -> dict[str, Any]:
    """Every stage, in order (synthesis skipped when ``synthesized`` is given); returns the manifest it wrote
    to ``out``."""
    started_all = time.monotonic()
    tasks, stages = synthesized or synthesize_tasks(config, guard, log)
    carried_s = sum(stages.seconds.values()) if synthesized else 0.0  # synthesis done in an earlier run
    started = time.monotonic()
    box = config.verify_seconds
    kernels_end, verify_end = (started + 0.8 * box, started + box) if box > 0 else (None, None)
    kernels = translate_and_verify(tasks, pool, config.children, config.seed, log, kernels_end)
    stages.timed("translate_evolve_verify", started)
    verdicts = Counter(a.result.verdict.value for tk in kernels for a in tk.attempts)
    per_mode: dict[str, Counter[str]] = {}
    for tk in kernels:
        c = per_mode.setdefault(tk.task.mode, Counter())
        c["tasks"] += 1
        c["translated"] += not tk.declined
        c["verified_correct"] += tk.best() is not None
        c["unverified"] += not tk.declined and not tk.attempts  # left out by the verification box
    stages.counts.update(kernels_per_mode={m: dict(c) for m, c in per_mode.items()}, candidate_verdicts=dict(
        verdicts), evaluations=sum(len(tk.attempts) for tk in kernels))
    stages.counts["evaluation_seconds_median"] = _median([a.result.seconds for tk in kernels for a in tk.attempts])
    stages.counts["failure_examples"] = _failure_examples(kernels)
    started = time.monotonic()
    fixes, corruption_counts = corrupted_fixes(kernels, pool, config.corruptions, config.feedback_chars, log,
                                               verify_end)
    fixes += real_fixes(kernels, config.feedback_chars)
    stages.timed("corrupt_verify", started)
    stages.counts["corruptions"] = corruption_counts
    by_split = build_records(kernels, fixes, config, stages)
    stages.seconds["total"] = round(carried_s + time.monotonic() - started_all, 2)
    verify_s = stages.seconds["translate_evolve_verify"]
    stages.counts["evaluations_per_minute"] = round(60 * stages.counts["evaluations"] / max(verify_s, 1e-9), 1)
    manifest = {"config": {**asdict(config), "counts": config.counts()}, "kernelbench_problems": len(guard),
                "kernelbench_threshold": guard.threshold, "counts": stages.counts, "seconds": stages.seconds,
                # the tasks this build judged (verified, failed or declined): a later build of the same tasks
                # file skips them (attempted_in) and verifies the rest
                "attempted": sorted(tk.task.task_id for tk in kernels if tk.attempts or tk.declined)}
    return write(out, by_split, manifest)


def attempted_in(corpus_dir: Path) -> set[str]:
    """The task ids an earlier build judged, from its manifest."""
    try:
        manifest = json.loads((corpus_dir / "manifest.json").read_text(encoding="utf-8"))
        return set(manifest["attempted"])
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"{corpus_dir} is not a corpus built with a list of the tasks it judged: {e}") from e
