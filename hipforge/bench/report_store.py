"""Reports in the warehouse: per-task and per-level rows, the previous report, and each kernel's lineage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hipforge.agents.archive import KernelArchive
from hipforge.bench.models import ModelSpec
from hipforge.bench.report import TaskOutcome, level_rows, strict_result, task_row
from hipforge.store import Warehouse
from hipforge.store.lineage import LineageNode, lineage

Row = dict[str, Any]
TASK_COLUMNS = ("task_id", "task_name", "level", "kernel_id", "eval_id", "declined", "verdict", "compiled",
                "correct_strict", "correct_loose", "max_abs_err", "max_rel_err", "speedup_eager", "speedup_compiled")
LEVEL_COLUMNS = ("level", "tolerance", "tasks", "compiled", "correct", "fast_0", "fast_0_5", "fast_0_8", "fast_1",
                 "fast_1_2", "fast_1_5", "fast_2", "geomean_eager", "geomean_compiled")


def save_report(warehouse: Warehouse, run_id: str, model: str, task_set: str, backend: str, arch: str,
                tasks: Sequence[Row], levels: Sequence[Row]) -> None:
    """Both tables in one transaction; a retried run replaces its own rows."""
    head = ("run_id", "model", "task_set")
    with warehouse.transaction() as con:
        for table in ("report_tasks", "report_levels"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ? AND model = ?", [run_id, model])
        for table, columns, rows, tail in (("report_tasks", TASK_COLUMNS, tasks, ("backend", "arch")),
                                           ("report_levels", LEVEL_COLUMNS, levels, ("backend",))):
            names = (*head, *columns, *tail)
            extra = {"backend": backend, "arch": arch}
            values = [[run_id, model, task_set, *(r[c] for c in columns), *(extra[t] for t in tail)] for r in rows]
            if values:
                con.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                                values)


def record_report(warehouse: Warehouse, run_id: str, spec: ModelSpec, task_set: str, backend: str, arch: str,
                  outcomes: Sequence[TaskOutcome]) -> tuple[list[Row], list[Row]]:
    """Archive every evaluated kernel (its verdict at 1e-4, the archive's standard) with its lineage, then
    store the report's task and level rows; returns both."""
    archive, rows = KernelArchive(warehouse), []
    for outcome in outcomes:
        row = task_row(outcome)
        row["eval_id"] = (archive.record(outcome.task.task_id, outcome.candidate, strict_result(outcome.result),
                                         run_id, generation=0, model=spec.model or spec.key)
                          if outcome.candidate and outcome.result else None)
        rows.append(row)
    levels = level_rows(rows)
    save_report(warehouse, run_id, spec.key, task_set, backend, arch, rows, levels)
    return rows, levels


def _rows(warehouse: Warehouse, sql: str, params: list[Any]) -> list[Row]:
    if not warehouse.path.exists():
        return []
    with warehouse.connect() as con:  # migrates an older warehouse that predates the report tables
        cursor = con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def previous_levels(warehouse: Warehouse, model: str, task_set: str, backend: str, run_id: str) -> list[Row]:
    """The level rows of the latest earlier report of this model, task set and backend."""
    sql = ("SELECT * FROM report_levels WHERE run_id = (SELECT run_id FROM report_levels WHERE model = ? AND "
           "task_set = ? AND backend = ? AND run_id <> ? ORDER BY created_at DESC LIMIT 1) AND model = ? "
           "ORDER BY level, tolerance")
    return _rows(warehouse, sql, [model, task_set, backend, run_id, model])


def latest_levels(warehouse: Warehouse, model: str | None = None) -> dict[str, list[Row]]:
    """Each model's (or one model's) latest report, by model."""
    sql = ("SELECT * FROM report_levels l WHERE (? IS NULL OR model = ?) AND run_id = (SELECT run_id FROM "
           "report_levels m WHERE m.model = l.model ORDER BY created_at DESC LIMIT 1) ORDER BY model, level, tolerance")
    out: dict[str, list[Row]] = {}
    for row in _rows(warehouse, sql, [model, model]):
        out.setdefault(row["model"], []).append(row)
    return out


def report_tasks(warehouse: Warehouse, run_id: str, model: str) -> list[Row]:
    return _rows(warehouse, "SELECT * FROM report_tasks WHERE run_id = ? AND model = ? ORDER BY level, task_name",
                 [run_id, model])


def _collect(node: LineageNode, relation: str) -> list[str]:
    found = [node.id] if node.relation == relation else []
    return found + [x for child in node.children for x in _collect(child, relation)]


def kernel_lineage(warehouse: Warehouse, kernel_ids: Sequence[str]) -> list[Row]:
    """Per kernel: its task, parents, evaluations with their Dagster runs, and checkpoints trained on it."""
    out = []
    for kid in dict.fromkeys(kernel_ids):
        up, down = lineage(warehouse, kid, "ancestors"), lineage(warehouse, kid, "descendants")
        parents = [c for c in up.children if c.relation in ("evolved_from", "inspired_by")]
        evaluations = [(c.id, c.label, c.run_id) for c in down.children if c.relation == "evaluated_by"]
        out.append({"kernel_id": kid, "task": _collect(up, "translated_from"),
                    "parents": [f"{c.relation}:{c.id}" for c in parents], "evaluations": evaluations,
                    "checkpoints": _collect(down, "trained_into")})
    return out


def checkpoint_preset(warehouse: Warehouse, model: str) -> str | None:
    """The training preset a report's checkpoint model (checkpoint:<id>) was trained with, as its row records it;
    None for other models and for rows written before the preset was recorded."""
    import json

    from hipforge.bench.models import CHECKPOINT_PREFIX, has_table

    if not model.startswith(CHECKPOINT_PREFIX):
        return None
    with warehouse.connect(read_only=True) as con:
        if not has_table(con, "checkpoints"):
            return None
        row = con.execute("SELECT hyperparameters FROM checkpoints WHERE checkpoint_id = ?",
                          [model.removeprefix(CHECKPOINT_PREFIX)]).fetchone()
    if row is None or not row[0]:
        return None
    value = json.loads(row[0]) if isinstance(row[0], str) else row[0]
    return value.get("preset") if isinstance(value, dict) else None
