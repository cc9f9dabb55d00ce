"""Checkpoints under warehouse/checkpoints/ (git-ignored): weights and tokenizer, metadata.json (base model,
data snapshot, hyperparameters, metrics) and the loss and reward curves as plots."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hipforge.plots import new_figure, to_png
from hipforge.train.records import Record, snapshot_id


def checkpoint_id(stage: str, base_model: str, snapshot: str, hyperparameters: dict[str, Any], run_id: str) -> str:
    text = json.dumps([stage, base_model, snapshot, hyperparameters, run_id], sort_keys=True)
    return f"{stage}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def with_snapshot(row: dict[str, Any], records: Sequence[Record]) -> dict[str, Any]:
    """The row with ``data_snapshot`` (the hash of the sorted record ids it trained on) and the record count;
    a row that already names another snapshot is refused rather than silently relabelled."""
    snapshot = snapshot_id(records)
    if row.get("data_snapshot") not in (None, snapshot):
        raise ValueError(f"checkpoint row names data snapshot {row['data_snapshot']}, but its records are {snapshot}")
    return {**row, "data_snapshot": snapshot, "records": len(records)}


def write_metadata(path: Path, row: dict[str, Any], records: Sequence[Record] | None = None) -> Path:
    """metadata.json beside the weights: enough to reproduce or compare the run without the warehouse. Given the
    records it trained on, the row carries their data snapshot id (``with_snapshot``)."""
    out = path / "metadata.json"
    out.write_text(json.dumps(row if records is None else with_snapshot(row, records), indent=2, default=str),
                   encoding="utf-8")
    return out


def curve_plot(curves: dict[str, Sequence[tuple[int, float]]], title: str) -> bytes | None:
    """One line per named curve over training steps; None when there is nothing to draw."""
    drawn = {name: points for name, points in curves.items() if points}
    if not drawn:
        return None
    fig, axes = new_figure(6, 3)
    for name, points in drawn.items():
        axes.plot([s for s, _ in points], [v for _, v in points], marker="o", markersize=3, label=name)
    axes.set_xlabel("step")
    axes.set_title(title, **({"fontsize": 9} if "\n" in title else {}))  # a subtitle: two lines fit
    axes.legend()
    return to_png(fig)
