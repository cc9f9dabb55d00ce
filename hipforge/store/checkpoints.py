"""The checkpoints table: trained models, each trained_into from the records it learned from.

Readers open it read-only, which does not migrate: a warehouse no model was trained into may have no
checkpoints table, and each reader says what that means for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hipforge.store.warehouse import Warehouse, has_table


def insert_checkpoint(warehouse: Warehouse, row: Mapping[str, Any], edges: Sequence[Mapping[str, Any]],
                      run_id: str) -> None:
    """The checkpoint's row (a checkpoint stored again keeps its first run, and names this one as the last that
    saw it) and its trained_into edges in one transaction."""
    with warehouse.transaction() as con:
        warehouse.insert("checkpoints", [row], run_id, on_conflict="replace", con=con)
        warehouse.insert("lineage_edges", edges, run_id, con=con)


def latest_checkpoint(warehouse: Warehouse, stage: str) -> dict[str, Any]:
    with warehouse.connect(read_only=True) as con:
        cursor = con.execute("SELECT * FROM checkpoints WHERE stage = ? ORDER BY last_seen_at DESC LIMIT 1", [stage])
        names = [d[0] for d in cursor.description]
        row = cursor.fetchone()
    if row is None:
        raise LookupError(f"no {stage} checkpoint in the warehouse: materialize {stage}_checkpoint first")
    return dict(zip(names, row, strict=True))


def checkpoint_ids(warehouse: Warehouse) -> list[str] | None:
    """Every checkpoint id, oldest first; None when there is no checkpoints table yet."""
    rows = _read(warehouse, "SELECT checkpoint_id FROM checkpoints ORDER BY created_at, checkpoint_id")
    return None if rows is None else [row[0] for row in rows]


def newest_per_stage(warehouse: Warehouse) -> list[str]:
    """The newest checkpoint id of each stage, oldest first; none without a checkpoints table."""
    rows = _read(warehouse, "SELECT checkpoint_id FROM checkpoints QUALIFY row_number() OVER "
                            "(PARTITION BY stage ORDER BY last_seen_at DESC) = 1 ORDER BY last_seen_at")
    return [row[0] for row in rows or []]


def checkpoint_path(warehouse: Warehouse, checkpoint_id: str) -> str | None:
    """Where the checkpoint's files are, None when no row has that id; LookupError without a checkpoints table."""
    rows = _read(warehouse, "SELECT path FROM checkpoints WHERE checkpoint_id = ?", [checkpoint_id])
    if rows is None:
        raise LookupError("the warehouse has no checkpoints table yet")
    return str(rows[0][0]) if rows else None


def hyperparameters(warehouse: Warehouse, checkpoint_id: str) -> Any:
    """The hyperparameters the checkpoint's row records (parsed), None when there are none to read."""
    rows = _read(warehouse, "SELECT hyperparameters FROM checkpoints WHERE checkpoint_id = ?", [checkpoint_id])
    if not rows or not rows[0][0]:
        return None
    return json.loads(rows[0][0]) if isinstance(rows[0][0], str) else rows[0][0]


def _read(warehouse: Warehouse, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]] | None:
    """The query's rows on a read-only connection, None when there is no checkpoints table yet."""
    with warehouse.connect(read_only=True) as con:
        if not has_table(con, "checkpoints"):
            return None
        return con.execute(sql, list(params)).fetchall()
