"""The kernels table and its evaluations as the archive reads them: bests, histories, failures.

Rows come back as dicts (evaluation columns plus the kernel's source, agent, model and generation;
`detail` parsed from JSON); a warehouse not yet created is an empty archive.
"""

from __future__ import annotations

import json
from typing import Any

from hipforge.store.warehouse import Warehouse

Row = dict[str, Any]
_COLUMNS = "e.*, k.source, k.agent, k.model, k.generation"
_FROM = "FROM evaluations e JOIN kernels k ON k.kernel_id = e.kernel_id"
_SELECT = f"SELECT {_COLUMNS} {_FROM}"
# A kernel that ever failed on a backend is not trusted as that backend's best: a race or an
# off-by-one can pass some seeds and runs, and the best seeds the next generation.
_TRUSTED = """
    e.verdict = 'correct' AND NOT EXISTS (
        SELECT 1 FROM evaluations f WHERE f.kernel_id = e.kernel_id AND f.task_id = e.task_id
        AND f.backend = e.backend AND f.verdict <> 'correct')
"""
_FASTEST = "e.speedup_eager DESC NULLS LAST, e.runtime_ms ASC NULLS LAST, e.created_at"


def best_evaluation(warehouse: Warehouse, task_id: str, backend: str | None = None) -> Row | None:
    """The fastest trusted correct evaluation of the task (by speedup over eager, then runtime)."""
    sql = f"{_SELECT} WHERE e.task_id = ? AND {_TRUSTED}"
    params: list[Any] = [task_id]
    if backend:
        sql, params = sql + " AND e.backend = ?", [*params, backend]
    rows = _rows(warehouse, f"{sql} ORDER BY {_FASTEST} LIMIT 1", params)
    return rows[0] if rows else None


def per_task_best(warehouse: Warehouse, backend: str | None = None) -> list[Row]:
    """Each task's fastest trusted correct evaluation, by task id."""
    where = f"{_TRUSTED} AND e.backend = ?" if backend else _TRUSTED
    sql = (f"{_SELECT} WHERE {where} QUALIFY row_number() OVER (PARTITION BY e.task_id ORDER BY {_FASTEST}) = 1"
           " ORDER BY e.task_id")
    return _rows(warehouse, sql, [backend] if backend else [])


def task_history(warehouse: Warehouse, task_id: str) -> list[Row]:
    """Every evaluation of the task in the order it was recorded, with the kernel's evolved_from parents."""
    parents = ("(SELECT coalesce(list(parent_id ORDER BY parent_id), []) FROM lineage_edges l"
               " WHERE l.child_id = e.kernel_id AND l.relation = 'evolved_from') AS parents")
    sql = f"SELECT {_COLUMNS}, {parents} {_FROM} WHERE e.task_id = ? ORDER BY e.created_at, e.rowid"
    return _rows(warehouse, sql, [task_id])


def recent_failures(warehouse: Warehouse, task_id: str, n: int) -> list[Row]:
    """The task's last n failed evaluations, newest first."""
    return _rows(warehouse, f"{_SELECT} WHERE e.task_id = ? AND e.verdict <> 'correct' "
                 "ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?", [task_id, n])


def trusted_correct(warehouse: Warehouse, task_id: str | None = None) -> list[Row]:
    """Every trusted correct evaluation (of one task, or all), fastest first, with only what a prompt shows:
    the detail JSON (logs) of every correct evaluation would be the bulk."""
    columns = "e.eval_id, e.kernel_id, e.task_id, e.backend, e.runtime_ms, e.speedup_eager, k.source, k.agent"
    sql = f"SELECT {columns} {_FROM} WHERE {_TRUSTED}" + (" AND e.task_id = ?" if task_id else "")
    return _rows(warehouse, f"{sql} ORDER BY {_FASTEST}", [task_id] if task_id else [])


def kernel_sources(warehouse: Warehouse) -> list[str]:
    """Every archived kernel's source, by kernel id (read-only)."""
    with warehouse.connect(read_only=True) as con:
        return [row[0] for row in con.execute("SELECT source FROM kernels ORDER BY kernel_id").fetchall()]


def _rows(warehouse: Warehouse, sql: str, params: list[Any]) -> list[Row]:
    if not warehouse.path.exists():  # nothing recorded yet: an empty archive, not an error
        return []
    with warehouse.connect(read_only=True) as con:
        cursor = con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    for row in rows:
        if isinstance(row.get("detail"), str):
            row["detail"] = json.loads(row["detail"])
    return rows
