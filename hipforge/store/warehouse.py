"""Connections, transactional batch writes, id look-ups and table checks on the DuckDB warehouse."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hipforge.store.migrate import apply_migrations

if TYPE_CHECKING:  # imported where used: hipforge must import without duckdb (the GPU machine)
    import duckdb

# Tables whose rows are addressed by one id column, in the order `find` searches them.
ID_COLUMNS: dict[str, str] = {
    "tasks": "task_id",
    "kernels": "kernel_id",
    "evaluations": "eval_id",
    "llm_calls": "call_id",
}
# what `find` (and so `hipforge show` / `lineage`) looks ids up in: every id the CLI prints
FINDABLE: dict[str, str] = {**ID_COLUMNS, "records": "record_id", "checkpoints": "checkpoint_id"}
_PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    **{table: (column,) for table, column in ID_COLUMNS.items()},
    "lineage_edges": ("child_id", "parent_id", "relation"),
    "records": ("record_id", "snapshot"),
    "checkpoints": ("checkpoint_id",),
}
# tables whose rows also name the latest run that stored them (last_run_id, last_seen_at), beside the first
LAST_SEEN = {"tasks", "records", "checkpoints"}


LOCK_WAITS_S = (0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0)


class UnreadableWarehouse(OSError):
    """The warehouse file is there but DuckDB cannot open it: not a database, a directory, or still locked."""


def _sql_value(value: Any) -> Any:
    """DuckDB takes JSON columns as text; dicts and lists are serialized here, once."""
    return json.dumps(value, default=str) if isinstance(value, (dict, list, tuple)) else value


class Warehouse:
    """One DuckDB file. Connections are short-lived: DuckDB allows one writer process at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @contextmanager
    def connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        if read_only and not self.path.exists():
            raise FileNotFoundError(f"no warehouse at {self.path}: materialize an asset or run `hipforge demo`")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = self._open(read_only)
        try:
            if not read_only:
                apply_migrations(con)
            yield con
        finally:
            con.close()

    def _open(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        """DuckDB lets one process write a file at a time: another writer's short batch is waited out."""
        import duckdb

        for wait in (*LOCK_WAITS_S, None):
            try:
                return duckdb.connect(str(self.path), read_only=read_only)
            except duckdb.IOException as err:
                if wait is None or "lock" not in str(err).lower():
                    reason = str(err).removeprefix("IO Error: ")
                    raise UnreadableWarehouse(f"cannot open the warehouse {self.path}: {reason}") from err
                time.sleep(wait)
        raise AssertionError("unreachable")

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A batch that lands whole or not at all: a writer dying mid-way leaves nothing partial."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def insert(
        self,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        run_id: str,
        on_conflict: Literal["keep", "replace"] = "keep",
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> int:
        """Insert rows stamped with run_id; existing keys are kept or have their content replaced. A replaced
        row keeps its first run_id and created_at: provenance says who first saw it, never the latest re-run;
        in the LAST_SEEN tables every row stored, new or not, names this run as the last that saw it.
        Returns rows written."""
        if not rows:
            return 0
        if con is None:
            with self.transaction() as tx:
                return self.insert(table, rows, run_id, on_conflict, tx)
        given = list(rows[0].keys())
        for row in rows:
            if list(row.keys()) != given:
                raise ValueError(f"rows for {table} disagree on columns: {sorted(row)} vs {given}")
        last_seen = {"last_run_id": "?", "last_seen_at": "current_timestamp"} if table in LAST_SEEN else {}
        stamps = {"run_id": "?", "created_at": "current_timestamp", **last_seen}  # column -> value
        keys = _PRIMARY_KEYS[table]
        updates = [c for c in given if c not in keys] if on_conflict == "replace" else []
        updates += list(last_seen)
        action = "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in updates) if updates else "DO NOTHING"
        sql = (
            f"INSERT INTO {table} ({', '.join([*given, *stamps])}) "
            f"VALUES ({', '.join(['?'] * len(given) + list(stamps.values()))}) "
            f"ON CONFLICT ({', '.join(keys)}) {action}"
        )
        runs = [run_id] * list(stamps.values()).count("?")
        before = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        con.executemany(sql, [[_sql_value(row[c]) for c in given] + runs for row in rows])
        after = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        return len(rows) if on_conflict == "replace" else after - before

    def find(self, id_or_prefix: str) -> tuple[str, dict[str, Any]]:
        """The row whose id is, or else starts with, the given text, and its table; errors name the ambiguity.
        A full id wins over longer ids it is a prefix of: every id the CLI prints must find its own row."""
        if len(id_or_prefix) < 4:
            raise KeyError(f"id prefix {id_or_prefix!r} is too short: give at least 4 characters")
        with self.connect(read_only=True) as con:
            hits = _hits(con, "{column} = ?", id_or_prefix) or _hits(con, "starts_with({column}, ?)", id_or_prefix)
        if not hits:
            raise KeyError(f"no task, kernel, evaluation, LLM call, record or checkpoint has an id starting with "
                           f"{id_or_prefix!r}")
        if len(hits) > 1:
            ids = ", ".join(f"{t}:{r[FINDABLE[t]]}" for t, r in hits)
            raise KeyError(f"id prefix {id_or_prefix!r} is ambiguous: {ids}")
        return hits[0]


def _hits(con: duckdb.DuckDBPyConnection, condition: str, value: str) -> list[tuple[str, dict[str, Any]]]:
    """(table, row) of up to 3 distinct ids per findable table whose id column meets the condition."""
    tables = {row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    hits: list[tuple[str, dict[str, Any]]] = []
    for table, column in FINDABLE.items():
        if table not in tables:
            continue
        # a record appears once per snapshot it belongs to: its latest row stands for it
        cursor = con.execute(f"SELECT * FROM {table} WHERE {condition.format(column=column)} "
                             "ORDER BY created_at DESC", [value])
        names = [d[0] for d in cursor.description]
        first: dict[Any, dict[str, Any]] = {}
        for row in cursor.fetchmany(50):
            first.setdefault(row[names.index(column)], dict(zip(names, row, strict=True)))
        hits += [(table, found) for found in list(first.values())[:3]]
    return hits


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether a table exists yet: read-only connections do not migrate, so an older file may predate it."""
    sql = "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
    return bool(con.execute(sql, [name]).fetchone()[0])
