"""The summarizer's tables: candidates the plausibility judge kept off the GPU, and the lessons rows. The newest
lessons row is what every prompt that wants lessons reads (the LLM translator, RL prompts)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from hipforge.store.warehouse import Warehouse, has_table


def insert_rejection(warehouse: Warehouse, task_id: str, kernel_id: str, source: str, agent: str, judge: str,
                     score: float, reasons: str, run_id: str) -> None:
    """One candidate the judge kept off the GPU, with its source: it was never evaluated, so nothing else has it."""
    row = [uuid.uuid4().hex, task_id, kernel_id, source, agent, judge, score, reasons, run_id]
    with warehouse.transaction() as con:
        con.execute("INSERT INTO plausibility_rejections (rejection_id, task_id, kernel_id, source, agent, judge, "
                    "score, reasons, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)


def recent_rejections(warehouse: Warehouse, limit: int) -> list[tuple[str, float, str]]:
    """(judge, score, reasons) of the newest `limit` plausibility rejections; none in a warehouse that predates
    the table."""
    with warehouse.connect(read_only=True) as con:
        if not has_table(con, "plausibility_rejections"):
            return []
        return con.execute("SELECT judge, score, reasons FROM plausibility_rejections "
                           "ORDER BY created_at DESC LIMIT ?", [limit]).fetchall()


def store_lessons(warehouse: Warehouse, text: str, summarizer: str, failures: int,
                  clusters: Sequence[Mapping[str, Any]], run_id: str) -> str:
    """A new lessons row (the newest is the one prompts read); returns its id."""
    lessons_id = uuid.uuid4().hex
    with warehouse.transaction() as con:
        con.execute("INSERT INTO lessons (lessons_id, summarizer, text, failures, clusters, run_id) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [lessons_id, summarizer, text, failures, json.dumps(list(clusters)), run_id])
    return lessons_id


def latest_lessons(warehouse: Warehouse) -> str:
    """The newest lessons text, "" when the summarizer has not run (or found nothing to learn from)."""
    if not warehouse.path.exists():
        return ""
    with warehouse.connect(read_only=True) as con:
        if not has_table(con, "lessons"):
            return ""
        row = con.execute("SELECT text FROM lessons ORDER BY created_at DESC LIMIT 1").fetchone()
    return row[0] if row else ""
