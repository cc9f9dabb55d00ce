"""Rows the tests store through the store's own functions (SQL stays in hipforge/store)."""

from __future__ import annotations

from typing import Any

from hipforge.store import Warehouse
from hipforge.store.checkpoints import insert_checkpoint


def checkpoint(warehouse: Warehouse, checkpoint_id: str, path: str = "p", base_model: str = "embedded:tiny-qwen2",
               hyperparameters: dict[str, Any] | None = None, run_id: str = "train-run") -> None:
    """An SFT checkpoint's row, trained on snapshot 'snap'."""
    insert_checkpoint(warehouse, {"checkpoint_id": checkpoint_id, "stage": "sft", "base_model": base_model,
                                  "path": path, "data_snapshot": "snap", "hyperparameters": hyperparameters or {},
                                  "metrics": None}, [], run_id)
