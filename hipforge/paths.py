"""Where hipforge keeps its state by default: everything under the repository root."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def default_warehouse_path() -> Path:
    """HIPFORGE_WAREHOUSE overrides the embedded default (a DuckDB file under warehouse/)."""
    configured = os.environ.get("HIPFORGE_WAREHOUSE")
    return Path(configured) if configured else REPO_ROOT / "warehouse" / "hipforge.duckdb"


def webserver_url() -> str:
    return os.environ.get("HIPFORGE_DAGSTER_URL", "http://127.0.0.1:3000").rstrip("/")


def default_inbox() -> Path:
    """Folder where users drop task files for the new-tasks sensor (HIPFORGE_INBOX overrides)."""
    configured = os.environ.get("HIPFORGE_INBOX")
    return Path(configured) if configured else REPO_ROOT / "warehouse" / "inbox"
