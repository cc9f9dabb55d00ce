"""The tasks table: every task stored with its check's verdict, and the views of it each stage reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hipforge.store.warehouse import Warehouse, has_table


def store_tasks(warehouse: Warehouse, rows: Sequence[Mapping[str, Any]], edges: Sequence[Mapping[str, Any]],
                run_id: str) -> tuple[int, int]:
    """Task rows (a re-checked task's content replaced, its first run_id and created_at kept) and their lineage
    edges in one transaction, so a writer dying mid-way leaves the tasks stored before untouched; every stored
    row records this run as the last that saw it. Returns (new task rows, edges written)."""
    with warehouse.transaction() as con:
        before = con.execute("SELECT count(*) FROM tasks").fetchone()[0]
        warehouse.insert("tasks", rows, run_id, on_conflict="replace", con=con)
        new_rows = con.execute("SELECT count(*) FROM tasks").fetchone()[0] - before
        return new_rows, warehouse.insert("lineage_edges", edges, run_id, con=con)


def accepted_task_rows(warehouse: Warehouse, origins: list[str]) -> list[tuple[str, str, str, str, str]]:
    """(task_id, name, source, smoke_source, group) of the accepted tasks of these origins, by origin and name;
    the group is the origin, with the mode for synthetic tasks."""
    with warehouse.connect() as con:
        return con.execute(
            "SELECT task_id, name, source, smoke_source, origin || CASE WHEN origin = 'synthetic' "
            "THEN '/' || category ELSE '' END FROM tasks WHERE status = 'accepted' "
            "AND list_contains(?, origin) ORDER BY origin, name", [origins]).fetchall()


def accepted_sources(warehouse: Warehouse, origins: list[str]) -> list[tuple[str, str]]:
    """(name, source) of the accepted tasks of these origins, by name."""
    with warehouse.connect() as con:
        return con.execute(
            "SELECT name, source FROM tasks WHERE status = 'accepted' AND origin IN "
            f"({', '.join('?' for _ in origins)}) ORDER BY name",
            origins,
        ).fetchall()


def stored_sources(warehouse: Warehouse, origin: str) -> dict[str, str]:
    """{name: source} of every stored task of this origin, accepted or rejected (none without a warehouse)."""
    if not warehouse.path.exists():
        return {}
    with warehouse.connect(read_only=True) as con:
        if not has_table(con, "tasks"):
            return {}
        return dict(con.execute("SELECT name, source FROM tasks WHERE origin = ?", [origin]).fetchall())


def task_names(warehouse: Warehouse) -> dict[str, str]:
    """task_id -> name of every stored task."""
    with warehouse.connect() as con:
        return dict(con.execute("SELECT task_id, name FROM tasks").fetchall())


def known_tasks(warehouse: Warehouse) -> list[tuple[str, str, str, str, str]]:
    """(task_id, name, origin, status, source) of every stored task: what new drafts are screened against."""
    with warehouse.connect() as con:
        return con.execute("SELECT task_id, name, origin, status, source FROM tasks").fetchall()


def task_sources(warehouse: Warehouse) -> dict[str, tuple[str, str]]:
    """task_id -> (source, smoke_source): the full size kernels are written for, and what the cpu backend runs."""
    with warehouse.connect() as con:
        return {tid: (src, smoke) for tid, src, smoke in
                con.execute("SELECT task_id, source, smoke_source FROM tasks").fetchall()}


def task_descriptions(warehouse: Warehouse) -> dict[str, tuple[str, Any, Any, str]]:
    """task_id -> (name, level, category, source), read-only."""
    with warehouse.connect(read_only=True) as con:
        found = con.execute("SELECT task_id, name, level, category, source FROM tasks").fetchall()
    return {r[0]: r[1:] for r in found}


def origin_verdicts(warehouse: Warehouse, origin: str) -> tuple[list[tuple[str, str]], int]:
    """([(name, 'code: reason')] of the origin's rejected tasks by name, how many it has accepted)."""
    with warehouse.connect() as con:
        rejected = con.execute(
            "SELECT name, reject_code || ': ' || reject_reason FROM tasks "
            "WHERE origin = ? AND status = 'rejected' ORDER BY name", [origin]
        ).fetchall()
        accepted = con.execute(
            "SELECT count(*) FROM tasks WHERE origin = ? AND status = 'accepted'", [origin]
        ).fetchone()[0]
    return rejected, accepted


def task_listing(warehouse: Warehouse, origin: str | None, status: str | None) -> tuple[list[tuple[str, ...]],
                                                                                          list[str]]:
    """(task_id, name, origin, status, reason) of the tasks matching the filters (None: any), by origin and name;
    and every origin stored, so an empty answer can say what there is instead."""
    with warehouse.connect(read_only=True) as con:
        rows = con.execute(
            "SELECT task_id, name, origin, status, coalesce(reject_code || ': ' || reject_reason, '') "
            "FROM tasks WHERE (? IS NULL OR origin = ?) AND (? IS NULL OR status = ?) ORDER BY origin, name",
            [origin, origin, status, status],
        ).fetchall()
        origins = [r[0] for r in con.execute("SELECT DISTINCT origin FROM tasks ORDER BY 1").fetchall()]
    return rows, origins


def status_counts(warehouse: Warehouse) -> list[tuple[str, str, int]]:
    """(origin, status, tasks), read-only."""
    with warehouse.connect(read_only=True) as con:
        return con.execute("SELECT origin, status, count(*) FROM tasks GROUP BY ALL ORDER BY ALL").fetchall()
