"""The summarizer's inputs and outputs in the warehouse: the pipeline's failure logs (failed evaluations with
their compile logs and verdict messages, candidates the plausibility judge kept off the GPU) in, the lessons
table out. `latest_lessons` is what every prompt that wants lessons reads (the LLM translator, RL prompts)."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict

from hipforge.agents.base import Candidate
from hipforge.agents.plausibility import PlausibilityReport
from hipforge.agents.summarizer import Failure, Lesson, failures_from_warehouse
from hipforge.execution.record import kernel_id
from hipforge.store import Warehouse

REJECTED = "rejected"  # the verdict a plausibility rejection gets among the failures


def record_rejection(warehouse: Warehouse, task_id: str, candidate: Candidate, report: PlausibilityReport,
                     judge: str, run_id: str) -> None:
    """One candidate the judge kept off the GPU, with its source: it was never evaluated, so nothing else has it."""
    row = [uuid.uuid4().hex, task_id, kernel_id(candidate.source), candidate.source, candidate.agent, judge,
           report.score, "; ".join(report.reasons) or "no reasons given", run_id]
    with warehouse.transaction() as con:
        con.execute("INSERT INTO plausibility_rejections (rejection_id, task_id, kernel_id, source, agent, judge, "
                    "score, reasons, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)


def pipeline_failures(warehouse: Warehouse, limit: int = 2000) -> list[Failure]:
    """The newest `limit` failed evaluations and the newest `limit` plausibility rejections."""
    if not warehouse.path.exists():
        return []
    failures = failures_from_warehouse(warehouse, limit=limit)
    if not _has_table(warehouse, "plausibility_rejections"):
        return failures
    with warehouse.connect(read_only=True) as con:
        rows = con.execute("SELECT judge, score, reasons FROM plausibility_rejections "
                           "ORDER BY created_at DESC LIMIT ?", [limit]).fetchall()
    return failures + [Failure(REJECTED, f"the plausibility judge {judge} scored it {score}: {reasons}")
                       for judge, score, reasons in rows]


def store_lessons(warehouse: Warehouse, text: str, summarizer: str, failures: int, clusters: list[Lesson],
                  run_id: str) -> str:
    """A new lessons row (the newest is the one prompts read); returns its id."""
    lessons_id = uuid.uuid4().hex
    with warehouse.transaction() as con:
        con.execute("INSERT INTO lessons (lessons_id, summarizer, text, failures, clusters, run_id) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [lessons_id, summarizer, text, failures, json.dumps([asdict(c) for c in clusters]), run_id])
    return lessons_id


def latest_lessons(warehouse: Warehouse) -> str:
    """The newest lessons text, "" when the summarizer has not run (or found nothing to learn from)."""
    if not warehouse.path.exists() or not _has_table(warehouse, "lessons"):
        return ""
    with warehouse.connect(read_only=True) as con:
        row = con.execute("SELECT text FROM lessons ORDER BY created_at DESC LIMIT 1").fetchone()
    return row[0] if row else ""


def _has_table(warehouse: Warehouse, table: str) -> bool:
    """Read-only connections do not migrate: an older warehouse file may predate the table."""
    with warehouse.connect(read_only=True) as con:
        found = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]).fetchone()
    return bool(found and found[0])
