"""The records table: training records by snapshot, each recorded_as from the kernel or task it came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hipforge.store.warehouse import Warehouse


def insert_records(warehouse: Warehouse, rows: Sequence[Mapping[str, Any]], edges: Sequence[Mapping[str, Any]],
                   run_id: str) -> None:
    """A snapshot's record rows (a record stored again keeps its first run, and names this one as the last that
    saw it) and their recorded_as edges in one transaction."""
    with warehouse.transaction() as con:
        warehouse.insert("records", rows, run_id, on_conflict="replace", con=con)
        warehouse.insert("lineage_edges", edges, run_id, con=con)


def latest_snapshot(warehouse: Warehouse, kind: str) -> tuple[str, str]:
    """(snapshot, export path) of the newest records of that kind."""
    with warehouse.connect(read_only=True) as con:
        row = con.execute("SELECT snapshot, export_path FROM records WHERE kind = ? ORDER BY last_seen_at DESC "
                          "LIMIT 1", [kind]).fetchone()
    if row is None:
        raise LookupError(f"no {kind} records in the warehouse: materialize {kind}_records first")
    return row[0], row[1]


def snapshot_record_ids(warehouse: Warehouse, snapshot: str) -> list[str]:
    with warehouse.connect(read_only=True) as con:
        rows = con.execute("SELECT record_id FROM records WHERE snapshot = ? ORDER BY record_id", [snapshot])
        return [r[0] for r in rows.fetchall()]
