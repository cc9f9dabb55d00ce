"""Versioned, idempotent schema migrations from warehouse/migrations/NNNN_name.sql."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: hipforge must import without duckdb (the GPU machine)
    import duckdb


MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "warehouse" / "migrations"
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationError(RuntimeError):
    pass


def _migration_files(directory: Path) -> list[tuple[int, str, str]]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file {path.name} is not named NNNN_name.sql")
        found.append((int(match.group(1)), match.group(2), path.read_text()))
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"duplicate migration versions in {directory}")
    return found


def _checksum(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()


def apply_migrations(con: duckdb.DuckDBPyConnection, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; return the names applied.

    Applying twice changes nothing. A migration edited after it was applied is an error,
    since the database would no longer match the files.
    """
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL,"
        " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    applied = dict(con.execute("SELECT version, checksum FROM schema_migrations").fetchall())
    done = []
    for version, name, sql in _migration_files(directory):
        if version in applied:
            if applied[version] != _checksum(sql):
                raise MigrationError(f"migration {version:04d}_{name} changed after it was applied")
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql)
            con.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)",
                [version, name, _checksum(sql)],
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        done.append(f"{version:04d}_{name}")
    return done


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0
