"""Screening a batch of drafts: exact duplicates, sanity checks, then near-duplicates, in draft order.

Exact duplicates are caught by task id before anything runs; a near-duplicate only counts against a
task that was itself accepted, so the check runs after the sanity checks. Everything comes back as
an Outcome, rejections included: nothing is dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from hipforge.tasks.reference_run import ReferenceRun
from hipforge.tasks.synth.candidate import Synthetic, stored_id
from hipforge.tasks.synth.sanity import DEFAULT_BUDGET, Budget, Rejection, sanity_check
from hipforge.tasks.synth.similarity import DEFAULT_THRESHOLD, Fingerprint, FingerprintIndex, fingerprint


@dataclass(frozen=True)
class Outcome:
    candidate: Synthetic
    row_id: str  # the task id it is stored under
    result: ReferenceRun | Rejection

    @property
    def accepted(self) -> bool:
        return not isinstance(self.result, Rejection)


def duplicate_row_id(tid: str, name: str) -> str:
    """A rejected exact duplicate cannot be stored under its task id (the original holds it): its own id."""
    return hashlib.sha256(f"{tid}/{name}".encode()).hexdigest()[:16]


class Screen:
    """Remembers what is taken: every stored task id (-> name) and the accepted synthetic fingerprints."""

    def __init__(
        self,
        known: dict[str, str],
        pool: list[tuple[str, str, Fingerprint]],
        threshold: float = DEFAULT_THRESHOLD,
        budget: Budget = DEFAULT_BUDGET,
        workers: int = 2,
    ) -> None:
        self.known, self.pool = known, FingerprintIndex(pool)
        self.threshold, self.budget, self.workers = threshold, budget, workers

    def __call__(self, drafts: Sequence[Synthetic]) -> list[Outcome]:
        ids = [stored_id(d.source) for d in drafts]
        owners = [self.known.setdefault(tid, d.name) for d, tid in zip(drafts, ids, strict=True)]
        fresh = [d for d, owner in zip(drafts, owners, strict=True) if owner == d.name]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            runs = dict(
                zip(
                    (d.name for d in fresh),
                    pool.map(lambda d: sanity_check(d.source, d.name, self.budget), fresh),
                    strict=True,
                )
            )
        outcomes = []
        for d, tid, owner in zip(drafts, ids, owners, strict=True):
            if owner != d.name:
                why = Rejection("duplicate", f"the same normalized source as {owner} (task {tid})")
                outcomes.append(Outcome(d, duplicate_row_id(tid, d.name), why))
                continue
            result = runs[d.name]
            if not isinstance(result, Rejection):
                result = self._distinct(d, tid) or result
            outcomes.append(Outcome(d, tid, result))
        return outcomes

    def _distinct(self, draft: Synthetic, tid: str) -> Rejection | None:
        """A near-duplicate rejection, or None after adding the draft to the accepted pool."""
        fp = fingerprint(draft.source)
        match = self.pool.best_above(fp, self.threshold, skip_id=tid)
        if match:
            return Rejection(
                "near_duplicate",
                f"{match.score:.3f} similar to {match.name} (task {match.task_id}; "
                f"threshold {self.threshold:g})",
            )
        self.pool.add(draft.name, tid, fp)
        return None
