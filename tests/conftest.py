"""Shared fixtures: a throwaway warehouse and the location of the KernelBench data used in tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hipforge.store import Warehouse

REPO_ROOT = Path(__file__).resolve().parents[1]


def kernelbench_jsonl() -> Path:
    """KernelBench problems live beside the checkout (shared/), never inside it."""
    configured = os.environ.get("HIPFORGE_KERNELBENCH_PATH")
    default = REPO_ROOT.parent / "shared" / "kernelbench" / "kernelbench_l1_l2a_l3.jsonl"
    return Path(configured) if configured else default


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(tmp_path / "test.duckdb")
