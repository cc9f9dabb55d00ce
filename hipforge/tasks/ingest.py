"""Check a batch of candidate tasks at smoke scale and store every one, accepted or rejected."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hipforge.store import Warehouse
from hipforge.store.tasks import store_tasks
from hipforge.tasks.errors import TaskError
from hipforge.tasks.reference_run import ReferenceRun, check_tasks
from hipforge.tasks.source import task_id


@dataclass(frozen=True)
class TaskCandidate:
    name: str
    source: str
    origin: str  # reference | kernelbench | synthetic | file
    category: str | None = None
    level: int | None = None
    problem_id: int | None = None
    composed_of: tuple[str, ...] = ()  # names of tasks this one combines


@dataclass
class IngestSummary:
    accepted: int = 0
    rejected: int = 0
    new_rows: int = 0
    edges: int = 0
    seconds: float = 0.0
    reject_codes: Counter[str] = field(default_factory=Counter)
    rejections: list[tuple[str, str]] = field(default_factory=list)  # (name, "code: message")
    task_ids: dict[str, str] = field(default_factory=dict)  # name -> task_id

    @property
    def total(self) -> int:
        return self.accepted + self.rejected


def _stored_id(source: str) -> str:
    """The normalized-source id; a source that does not even parse is addressed by its raw text."""
    try:
        return task_id(source)
    except TaskError:
        return hashlib.sha256(source.encode()).hexdigest()[:16]


def task_row(candidate: TaskCandidate, run: ReferenceRun | None, rejection: tuple[str, str] | None,
             row_id: str | None = None) -> dict[str, object]:
    """The tasks-table row of a checked candidate: its smoke run and full-size profile, or why it was rejected."""
    return {
        "task_id": row_id or _stored_id(candidate.source),
        "name": candidate.name,
        "origin": candidate.origin,
        "level": candidate.level,
        "problem_id": candidate.problem_id,
        "category": candidate.category,
        "source": candidate.source,
        "status": "rejected" if rejection else "accepted",
        "reject_code": rejection[0] if rejection else None,
        "reject_reason": rejection[1] if rejection else None,
        "smoke_source": run.source if run else None,
        "smoke_constants": run.constants if run else None,
        "output_shapes": run.output_shapes if run else None,
        "smoke_seconds": run.seconds if run else None,
        "flops": run.flops if run else None,
        "bytes_moved": run.bytes_moved if run else None,
        "full_output_shapes": run.full_shapes if run else None,
    }


def _row(candidate: TaskCandidate, outcome: ReferenceRun | TaskError) -> dict[str, object]:
    if isinstance(outcome, TaskError):
        return task_row(candidate, None, (outcome.code, outcome.message))
    return task_row(candidate, outcome, None)


def ingest_tasks(
    candidates: Iterable[TaskCandidate],
    warehouse: Warehouse,
    run_id: str,
    workers: int = 2,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> IngestSummary:
    """Smoke-check every candidate, then write all rows and composed_of edges in one transaction.

    A task already stored under the same id is re-checked and its row replaced, so a
    better checker can accept what an older one rejected; nothing else is touched.
    """
    started = time.monotonic()
    batch = list(candidates)
    by_name = {c.name: c for c in batch}
    if len(by_name) != len(batch):
        dupes = [n for n, k in Counter(c.name for c in batch).items() if k > 1]
        raise ValueError(f"task names must be unique within a batch; repeated: {dupes}")
    summary = IngestSummary()
    rows: list[dict[str, object]] = []
    for done, (name, outcome) in enumerate(check_tasks([(c.name, c.source) for c in batch], workers=workers), 1):
        row = _row(by_name[name], outcome)
        rows.append(row)
        summary.task_ids[name] = str(row["task_id"])
        if isinstance(outcome, TaskError):
            summary.rejected += 1
            summary.reject_codes[outcome.code] += 1
            summary.rejections.append((name, str(outcome)))
        else:
            summary.accepted += 1
        if on_progress:
            on_progress(done, len(batch), name)
    edges = [
        {"child_id": summary.task_ids[c.name], "parent_id": summary.task_ids[part], "relation": "composed_of"}
        for c in batch
        for part in c.composed_of
        if part in summary.task_ids
    ]
    rows.sort(key=lambda r: str(r["name"]))
    # Two names with identical normalized source collapse to one id: keep the first.
    unique = list({str(r["task_id"]): r for r in reversed(rows)}.values())
    summary.new_rows, summary.edges = store_tasks(warehouse, unique, edges, run_id)
    summary.seconds = time.monotonic() - started
    return summary
