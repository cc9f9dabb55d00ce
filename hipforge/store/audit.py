"""The audit_cases table: each verifier-audit case's verdict from the executor's gate and the plausibility judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hipforge.store.warehouse import Warehouse, has_table

CASE_COLUMNS = ("case_name", "category", "origin", "expected_check", "backend", "gate_verdict", "gate_check",
                "gate_passed", "gate_message", "judge", "judge_score", "judge_passed", "judge_reasons")
_COLUMNS = ("run_id", *CASE_COLUMNS)


def store_cases(warehouse: Warehouse, run_id: str, cases: Sequence[Sequence[Any]]) -> None:
    """The run's cases (values in CASE_COLUMNS order) in one transaction: a re-run of the same run replaces its
    rows."""
    with warehouse.transaction() as con:
        con.execute("DELETE FROM audit_cases WHERE run_id = ?", [run_id])
        con.executemany(f"INSERT INTO audit_cases ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                        [(run_id, *case) for case in cases])


def latest_deceptive(warehouse: Warehouse) -> tuple[str | None, list[tuple[str, str]], int]:
    """Of the latest audit: its run id (None before any), the (case_name, expected_check) of the deceptive cases
    the gate passed, by name, and how many deceptive cases it had."""
    with warehouse.connect() as con:
        latest = con.execute("SELECT run_id FROM audit_cases ORDER BY created_at DESC LIMIT 1").fetchone()
        run_id = latest[0] if latest else None
        slipped = con.execute(
            "SELECT case_name, expected_check FROM audit_cases WHERE run_id = ? AND category = 'deceptive' "
            "AND gate_passed ORDER BY case_name", [run_id]).fetchall()
        deceptive = con.execute("SELECT count(*) FROM audit_cases WHERE run_id = ? AND category = 'deceptive'",
                                [run_id]).fetchone()[0]
    return run_id, slipped, deceptive


def latest_gate_audit(warehouse: Warehouse, backend: str) -> dict[str, Any] | None:
    """The latest audit of the executor's gate on this backend (None before any): its run id, attacks caught of
    the deceptive cases, and honest kernels kept of the correct ones."""
    with warehouse.connect(read_only=True) as con:
        if not has_table(con, "audit_cases"):
            return None
        row = con.execute(
            "WITH latest AS (SELECT run_id FROM audit_cases WHERE backend = ? GROUP BY run_id "
            "ORDER BY max(created_at) DESC LIMIT 1) "
            "SELECT run_id, count(*) FILTER (category = 'deceptive'), "
            "count(*) FILTER (category = 'deceptive' AND NOT gate_passed), count(*) FILTER (category = 'correct'), "
            "count(*) FILTER (category = 'correct' AND gate_passed) FROM audit_cases WHERE run_id IN "
            "(SELECT run_id FROM latest) GROUP BY run_id", [backend]).fetchone()
    if row is None:
        return None
    return dict(zip(("run_id", "attacks", "caught", "honest", "kept"), row, strict=True))
