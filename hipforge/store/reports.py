"""The report tables: per-task and per-level rows of each model's KernelBench report, and earlier reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hipforge.store.warehouse import Warehouse

Row = dict[str, Any]
TASK_COLUMNS = ("task_id", "task_name", "level", "kernel_id", "eval_id", "declined", "verdict", "compiled",
                "correct_strict", "correct_loose", "max_abs_err", "max_rel_err", "speedup_eager", "speedup_compiled")
LEVEL_COLUMNS = ("level", "tolerance", "tasks", "compiled", "correct", "fast_0", "fast_0_5", "fast_0_8", "fast_1",
                 "fast_1_2", "fast_1_5", "fast_2", "geomean_eager", "geomean_compiled")


def save_report(warehouse: Warehouse, run_id: str, model: str, task_set: str, backend: str, arch: str,
                tasks: Sequence[Row], levels: Sequence[Row], protocol: str | None = None) -> None:
    """Both tables in one transaction; a retried run replaces its own rows. Rows may carry their `size`
    (full or smoke); `protocol` is the evaluator's protocol key the report ran under."""
    head = ("run_id", "model", "task_set")
    tail = ("backend", "arch", "protocol", "size")
    default_size = "smoke" if backend == "cpu" else "full"  # the cpu backend runs tasks smoke-scaled
    with warehouse.transaction() as con:
        for table in ("report_tasks", "report_levels"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ? AND model = ?", [run_id, model])
        for table, columns, rows in (("report_tasks", TASK_COLUMNS, tasks), ("report_levels", LEVEL_COLUMNS, levels)):
            names = (*head, *columns, *tail)
            values = [[run_id, model, task_set, *(r[c] for c in columns), backend, arch, protocol,
                       r.get("size", default_size)] for r in rows]
            if values:
                con.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                                values)


def _rows(warehouse: Warehouse, sql: str, params: list[Any]) -> list[Row]:
    if not warehouse.path.exists():
        return []
    with warehouse.connect() as con:  # migrates an older warehouse that predates the report tables
        cursor = con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def previous_levels(warehouse: Warehouse, model: str, task_set: str, backend: str, run_id: str,
                    arch: str | None = None) -> list[Row]:
    """The level rows of the latest earlier report of this model, task set and backend (and arch, if given)."""
    sql = ("SELECT * FROM report_levels WHERE run_id = (SELECT run_id FROM report_levels WHERE model = ? AND "
           "task_set = ? AND backend = ? AND run_id <> ? AND (? IS NULL OR arch = ?) ORDER BY created_at DESC LIMIT 1) "
           "AND model = ? ORDER BY level, tolerance")
    return _rows(warehouse, sql, [model, task_set, backend, run_id, arch, arch, model])


def latest_levels(warehouse: Warehouse, model: str | None = None, *, backend: str | None = None,
                  arch: str | None = None, task_set: str | None = None) -> dict[str, list[Row]]:
    """Each model's (or one model's) latest report, by model; with backend, arch or task set, its latest report
    that ran there, so that rows set side by side (a report's plots) were measured alike."""
    sql = ("SELECT * FROM report_levels l WHERE (? IS NULL OR model = ?) AND run_id = (SELECT run_id FROM "
           "report_levels m WHERE m.model = l.model AND (? IS NULL OR m.backend = ?) AND (? IS NULL OR "
           "m.task_set = ?) AND (? IS NULL OR m.arch = ?) ORDER BY created_at DESC LIMIT 1) "
           "ORDER BY model, level, tolerance")
    out: dict[str, list[Row]] = {}
    for row in _rows(warehouse, sql, [model, model, backend, backend, task_set, task_set, arch, arch]):
        out.setdefault(row["model"], []).append(row)
    return out
