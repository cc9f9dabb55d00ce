"""The corpus build's configuration and its first stage: tasks synthesized offline (never from KernelBench)
and split, saved so that verification can run elsewhere and loaded there, one shard of them to a machine; with
the record of each stage's seconds and counts that the manifest reports."""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hipforge.tasks.library import load_library
from hipforge.tasks.reference_run import ReferenceRun
from hipforge.tasks.synth import PRESETS, SeedTask, SynthConfig, synthesize_offline
from hipforge.tasks.synth.candidate import stored_id
from hipforge.train.corpus_kernels import CorpusTask
from hipforge.train.flow_data import spread
from hipforge.train.splits import KernelBenchGuard, SplitPolicy, split_tasks

Log = Callable[[str], None]


@dataclass(frozen=True)
class CorpusConfig:
    preset: str = "corpus"
    limit: int = 0  # > 0: about this many tasks in all, the preset's modes in proportion
    seed: int = 0
    backend: str = "cpu"
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)  # reference checks in parallel
    children: int = 2  # evolved variants per translation
    corruptions: int = 2  # corrupted attempts per verified task (one compile_error, one incorrect)
    feedback_chars: int = 1500  # of the log shown back: GRPOHyper.feedback_chars of the seed preset
    system: str = "full"
    policy: SplitPolicy = SplitPolicy()
    verify_seconds: float = 0.0  # > 0: a box for all verification (4/5 kernels, then corruptions)

    def counts(self) -> dict[str, int]:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}: choose one of {sorted(PRESETS)}")
        counts = dict(PRESETS[self.preset])
        if self.limit > 0:
            total = sum(counts.values())
            counts = {m: max(1, round(c * self.limit / total)) for m, c in counts.items()}
        return counts


@dataclass
class Stages:
    seconds: dict[str, float] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)

    def timed(self, name: str, started: float) -> None:
        self.seconds[name] = round(time.monotonic() - started, 2)


def _tasks(config: CorpusConfig, guard: KernelBenchGuard, stages: Stages, log: Log) -> list[CorpusTask]:
    started = time.monotonic()
    seeds = [SeedTask(t.name, t.source) for t in load_library()]  # never KernelBench: it is what we test on
    synth = SynthConfig(config.counts(), config.seed, workers=config.workers)
    summary = synthesize_offline(synth, seeds, log)
    stages.timed("synthesize", started)
    stages.counts["synthesized"] = summary.per_mode()
    stages.counts["reject_codes"] = dict(summary.reject_codes())
    started = time.monotonic()
    accepted = [o for o in summary.outcomes if o.accepted]
    split = split_tasks([o.candidate for o in accepted], guard, config.policy)
    stages.timed("split", started)
    stages.counts["kernelbench_excluded"] = dict(split.excluded)
    stages.counts["split_tasks"] = split.sizes()
    tasks = []
    for o in accepted:
        tid = stored_id(o.candidate.source)
        if tid in split.assigned:
            run = o.result
            assert isinstance(run, ReferenceRun)  # accepted outcomes carry their reference run
            eval_source = run.source if config.backend == "cpu" else o.candidate.source
            tasks.append(CorpusTask(tid, o.candidate.name, o.candidate.mode, o.candidate.source, eval_source,
                                    split.keys[tid], split.assigned[tid]))
    return tasks


def save_tasks(path: Path, tasks: Sequence[CorpusTask], stages: Stages) -> None:
    """The synthesized and split tasks with their stage counts, so that verification can run elsewhere (a
    path ending in .gz is gzipped)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"stages": asdict(stages), "tasks": [asdict(t) for t in tasks]}
    with _open(path, "wt") as f:
        f.write(json.dumps(payload) + "\n")


def load_tasks(path: Path) -> tuple[list[CorpusTask], Stages]:
    try:
        with _open(path, "rt") as f:
            payload = json.loads(f.read())
        return [CorpusTask(**t) for t in payload["tasks"]], Stages(**payload["stages"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a tasks file written by save_tasks: {e}") from e


def _open(path: Path, mode: str) -> Any:
    return gzip.open(path, mode, encoding="utf-8") if path.suffix == ".gz" else path.open(mode, encoding="utf-8")


def synthesize_tasks(config: CorpusConfig, guard: KernelBenchGuard, log: Log = lambda _: None
                     ) -> tuple[list[CorpusTask], Stages]:
    stages = Stages()
    return _tasks(config, guard, stages, log), stages


def shard_of(tasks: Sequence[CorpusTask], shard: int, shards: int, evaluation_tasks: int = 0) -> list[CorpusTask]:
    """Every ``shards``-th task from the ``shard``-th; with ``evaluation_tasks`` > 0 at most that many validation
    and held-out tasks (spread over each), first: they are few, and a box that ends early must leave some."""
    mine = list(tasks[shard::shards])
    if evaluation_tasks <= 0:
        return mine
    return [t for split in ("validation", "heldout") for t in
            spread([t for t in mine if t.split == split], evaluation_tasks)] + [t for t in mine if t.split == "train"]
