"""Stored evaluations: looked up by content (what a re-run may reuse instead of evaluating again), the failed
ones the summarizer learns from, and re-verifications of the archive's best kernels."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hipforge.store.warehouse import Warehouse

FAILED = ("compile_error", "runtime_error", "incorrect", "hacked", "timeout")
# verdicts that say more about the machine than the kernel are never reused
_NOT_REUSED = ("timeout",)


def stored_verdicts(warehouse: Warehouse, pairs: list[tuple[str, str]], protocol: str) -> dict[tuple[str, str],
                                                                                               tuple[str, Any]]:
    """(kernel_id, task_id) -> (eval_id, the verdict's full detail) of the latest evaluation of each pair under
    ``protocol``, for the pairs that have one (from any run, a killed one's included)."""
    if not pairs or not protocol:
        return {}
    # not read-only: a run's writers (the LLM call log's batch) may hold the file open in this process
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT kernel_id, task_id, eval_id, detail FROM evaluations e "
            "JOIN (SELECT unnest(?) AS k, unnest(?) AS t) p ON e.kernel_id = p.k AND e.task_id = p.t "
            "WHERE protocol = ? AND NOT list_contains(?, verdict) "
            "AND coalesce(json_extract_string(detail, '$.phase'), '') <> 'pool' ORDER BY created_at",
            [[k for k, _ in pairs], [t for _, t in pairs], protocol, list(_NOT_REUSED)]).fetchall()
    return {(k, t): (eid, json.loads(detail)) for k, t, eid, detail in rows}  # the latest wins


def failed_evaluations(warehouse: Warehouse, task_id: str | None = None,
                       limit: int | None = None) -> list[tuple[str, str | None, str | None, str]]:
    """(verdict, message, hack_check, detail JSON) of the failed evaluations, newest first, optionally of one
    task; none before the warehouse exists."""
    if not warehouse.path.exists():
        return []
    sql = f"SELECT verdict, message, hack_check, detail FROM evaluations WHERE verdict IN {FAILED}"
    sql += " AND task_id = ?" if task_id else ""
    sql += " ORDER BY created_at DESC" + (f" LIMIT {int(limit)}" if limit else "")
    with warehouse.connect(read_only=True) as con:
        return con.execute(sql, [task_id] if task_id else []).fetchall()


def failed_backends(warehouse: Warehouse, limit: int | None = None) -> list[tuple[str, str, int]]:
    """(backend, arch, count) of the newest `limit` failed evaluations (failed_evaluations' rows), most first."""
    if not warehouse.path.exists():
        return []
    newest = f"SELECT backend, arch FROM evaluations WHERE verdict IN {FAILED} ORDER BY created_at DESC"
    newest += f" LIMIT {int(limit)}" if limit else ""
    with warehouse.connect(read_only=True) as con:
        return con.execute(f"SELECT backend, arch, count(*) FROM ({newest}) GROUP BY ALL ORDER BY 3 DESC, 1, 2"
                           ).fetchall()


def store_reverifications(warehouse: Warehouse, evaluations: Sequence[Mapping[str, Any]],
                          edges: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], run_id: str) -> None:
    """New evaluations, their evaluated_by edges and the run's reverifications rows in one transaction; a retried
    run replaces its own reverifications rows."""
    with warehouse.transaction() as con:
        warehouse.insert("evaluations", evaluations, run_id, con=con)
        warehouse.insert("lineage_edges", edges, run_id, con=con)
        con.execute("DELETE FROM reverifications WHERE run_id = ?", [run_id])
        if rows:
            names = [*rows[0], "run_id"]
            con.executemany(f"INSERT INTO reverifications ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                            [[*r.values(), run_id] for r in rows])
