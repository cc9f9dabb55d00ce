"""Synthesize tasks in all three modes, screen them, and store every one with its lineage.

Each round drafts, for every mode, as many candidates as accepted tasks are still missing, until
every mode has its count or has used ``oversample`` times its count in drafts. Rows and lineage
edges land in one transaction at the end.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from hipforge.llm import LLMProvider
from hipforge.store import Warehouse
from hipforge.store.tasks import accepted_sources, known_tasks, store_tasks
from hipforge.tasks.ingest import TaskCandidate, task_row
from hipforge.tasks.synth.candidate import MODES, Mode, SeedTask
from hipforge.tasks.synth.generate import draft, write_with_llm
from hipforge.tasks.synth.sanity import DEFAULT_BUDGET, Budget, Rejection
from hipforge.tasks.synth.screen import Outcome, Screen
from hipforge.tasks.synth.similarity import DEFAULT_THRESHOLD, fingerprint

PRESETS: dict[str, dict[Mode, int]] = {
    "embedded": {"composition": 8, "mutation": 8, "constraint": 8},
    "production": {"composition": 166, "mutation": 168, "constraint": 166},  # 500, as in the seed
    # a training corpus: thousands of tasks, the share of each mode as the generators yield distinct ones
    "corpus": {"composition": 2500, "mutation": 1100, "constraint": 1500},
}


@dataclass(frozen=True)
class SynthConfig:
    counts: Mapping[Mode, int] = field(default_factory=lambda: dict(PRESETS["embedded"]))
    seed: int = 0
    threshold: float = DEFAULT_THRESHOLD  # near-duplicate similarity
    budget: Budget = DEFAULT_BUDGET
    workers: int = 2
    oversample: float = 2.0  # at most this many drafts per requested task


@dataclass
class SynthSummary:
    outcomes: list[Outcome]
    new_rows: int = 0
    edges: int = 0
    seconds: float = 0.0

    def per_mode(self) -> dict[str, dict[str, int]]:
        counts = {mode: {"accepted": 0, "rejected": 0} for mode in MODES}
        for o in self.outcomes:
            counts[o.candidate.mode]["accepted" if o.accepted else "rejected"] += 1
        return counts

    def rejections(self) -> list[tuple[str, Rejection]]:
        return [(o.candidate.name, o.result) for o in self.outcomes if isinstance(o.result, Rejection)]

    def reject_codes(self) -> Counter[str]:
        return Counter(r.code for _, r in self.rejections())


def load_seeds(warehouse: Warehouse, kernelbench: bool = True) -> list[SeedTask]:
    """Accepted reference tasks, and KernelBench ones when asked for and present, as mutation seeds."""
    origins = ["reference", "kernelbench"] if kernelbench else ["reference"]
    return [SeedTask(name, source) for name, source in accepted_sources(warehouse, origins)]


def _screen(warehouse: Warehouse, config: SynthConfig) -> Screen:
    rows = known_tasks(warehouse)
    known = {tid: name for tid, name, *_ in rows}
    pool = [
        (name, tid, fingerprint(source))
        for tid, name, origin, status, source in rows
        if origin == "synthetic" and status == "accepted"
    ]
    return Screen(known, pool, config.threshold, config.budget, config.workers)


def screen_rounds(
    config: SynthConfig,
    seeds: Sequence[SeedTask],
    screen: Screen,
    llm: LLMProvider | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> list[Outcome]:
    """Draft and screen round by round until every mode has its count or its share of drafts."""
    outcomes: list[Outcome] = []
    drafted = dict.fromkeys(config.counts, 0)
    while True:
        accepted = Counter(o.candidate.mode for o in outcomes if o.accepted)
        batch = []
        for mode, count in config.counts.items():
            want = min(count - accepted[mode], math.ceil(count * config.oversample) - drafted[mode])
            batch += [draft(mode, config.seed, i, seeds) for i in range(drafted[mode], drafted[mode] + want)]
            drafted[mode] += max(0, want)
        if not batch:
            return outcomes
        if llm is not None:
            batch = write_with_llm(batch, llm)
        outcomes += screen(batch)
        done = Counter(o.candidate.mode for o in outcomes if o.accepted)
        log(f"screened {len(batch)} drafts; accepted so far: {dict(done)}")


def synthesize_offline(
    config: SynthConfig, seeds: Sequence[SeedTask], log: Callable[[str], None] = lambda _: None
) -> SynthSummary:
    """The same rounds with nothing known beforehand and nothing stored: a corpus built outside the warehouse."""
    started = time.monotonic()
    screen = Screen({}, [], config.threshold, config.budget, config.workers)
    summary = SynthSummary(screen_rounds(config, seeds, screen, log=log))
    summary.seconds = time.monotonic() - started
    return summary


def synthesize(
    config: SynthConfig,
    seeds: Sequence[SeedTask],
    warehouse: Warehouse,
    run_id: str,
    llm: LLMProvider | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> SynthSummary:
    started = time.monotonic()
    summary = SynthSummary(screen_rounds(config, seeds, _screen(warehouse, config), llm, log))
    summary.new_rows, summary.edges = store(summary.outcomes, warehouse, run_id)
    summary.seconds = time.monotonic() - started
    return summary


def _row(o: Outcome) -> dict[str, object]:
    rejection = o.result if isinstance(o.result, Rejection) else None
    candidate = TaskCandidate(o.candidate.name, o.candidate.source, "synthetic", category=o.candidate.mode)
    run = None if rejection else o.result
    return task_row(candidate, run, (rejection.code, rejection.message) if rejection else None, row_id=o.row_id)


def store(outcomes: Sequence[Outcome], warehouse: Warehouse, run_id: str) -> tuple[int, int]:
    """Write every outcome and its lineage in one transaction; (new task rows, edges written)."""
    rows = [_row(o) for o in outcomes]
    edges = [edge for o in outcomes for edge in o.candidate.edges(o.row_id)]
    return store_tasks(warehouse, rows, edges, run_id)
