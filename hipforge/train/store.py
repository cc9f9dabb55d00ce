"""The warehouse side of training: records from the archive, their rows and recorded_as edges, checkpoint rows
with trained_into edges, and every RL candidate into the archive with its lineage (the SQL is in store/)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Candidate
from hipforge.agents.recorder import accepted_tasks
from hipforge.agents.runner import StageTask
from hipforge.agents.summarizer.offline import failures_from_warehouse, render_lessons, summarize
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult
from hipforge.store import Warehouse
from hipforge.store.checkpoints import insert_checkpoint
from hipforge.store.kernels import kernel_sources
from hipforge.store.records import insert_records
from hipforge.tasks.library import load_library
from hipforge.train.records import SYSTEM_PROMPTS, Record, rl_record, sft_record, snapshot_of_ids
from hipforge.train.splits import KernelBenchGuard

# never "kernelbench": it is what the reports measure a checkpoint on
ORIGINS = ["reference", "synthetic", "file"]


def training_tasks(warehouse: Warehouse, limit: int = 0) -> list[StageTask]:
    """Accepted tasks a model may train on: none from KernelBench, and none that equals or closely resembles
    a KernelBench problem in the warehouse (a synthetic mutation can land on one)."""
    problems = [(t.name, t.source) for t in accepted_tasks(warehouse, ["kernelbench"])]
    guard = KernelBenchGuard(problems) if problems else None
    tasks = [t for t in accepted_tasks(warehouse, ORIGINS) if guard is None or guard.match(t.source) is None]
    return tasks[:limit] if limit else tasks


def sft_records_from_archive(warehouse: Warehouse, system: str, backend: str | None = None) -> list[Record]:
    """One record per training task with a trusted verified kernel: its fastest one."""
    tasks = {t.task_id: t for t in training_tasks(warehouse)}
    best = [row for row in KernelArchive(warehouse).per_task_best(backend) if row["task_id"] in tasks]
    return [sft_record(r["task_id"], tasks[r["task_id"]].name, tasks[r["task_id"]].source, r["kernel_id"],
                       r["source"], float(r["speedup_eager"] or 0.0), system) for r in best]


def current_lessons(warehouse: Warehouse, max_chars: int = 1500) -> str:
    """The summarizer's lessons over every failure in the archive (called directly, not via an asset)."""
    return render_lessons(summarize(failures_from_warehouse(warehouse)), max_chars)


def rl_records_from_tasks(warehouse: Warehouse, backend: str, lessons: str, system: str,
                          limit: int = 0) -> list[Record]:
    tasks = training_tasks(warehouse, limit)
    return [rl_record(t.task_id, t.name, t.source, t.eval_source(backend), lessons, system) for t in tasks]


def tokenizer_corpus(warehouse: Warehouse) -> list[str]:
    """What the embedded tokenizer learns from: the reference library, every archived kernel, the prompts."""
    return [t.source for t in load_library()] + kernel_sources(warehouse) + list(SYSTEM_PROMPTS.values())


def store_records(warehouse: Warehouse, records: Sequence[Record], snapshot: str, export_path: str,
                  run_id: str) -> None:
    """Rows of one snapshot, and recorded_as edges from each record's kernel (SFT) or task (RL)."""
    rows = [{"record_id": r.record_id, "snapshot": snapshot, "kind": r.kind, "task_id": r.task_id,
             "kernel_id": r.kernel_id or None, "prompt": json.dumps(r.prompt),
             "completion": json.dumps(r.completion) if r.completion else None, "lessons": r.lessons or None,
             "export_path": export_path} for r in records]
    edges = [{"child_id": r.record_id, "parent_id": r.kernel_id or r.task_id, "relation": "recorded_as"}
             for r in records]
    insert_records(warehouse, rows, edges, run_id)


def store_checkpoint(warehouse: Warehouse, row: dict[str, Any], record_ids: Sequence[str], run_id: str) -> None:
    """The checkpoint's row and trained_into edges from every record it was trained on; its data_snapshot is the
    snapshot of those records (filled in when the row leaves it out, refused when the row names another)."""
    snapshot = snapshot_of_ids(record_ids)
    if row.get("data_snapshot") not in (None, snapshot):
        raise ValueError(f"checkpoint {row['checkpoint_id']} names data snapshot {row['data_snapshot']}, but was "
                         f"trained on the records of snapshot {snapshot}")
    row = {**row, "data_snapshot": snapshot}
    edges = [{"child_id": row["checkpoint_id"], "parent_id": rid, "relation": "trained_into"} for rid in record_ids]
    values = {**row, "hyperparameters": json.dumps(row["hyperparameters"]), "metrics": json.dumps(row["metrics"])}
    insert_checkpoint(warehouse, values, edges, run_id)


class ArchiveRecorder:
    """Archives each RL candidate: a retry evolves from the attempt it fixes; the first attempt comes from
    its task. Returns the kernel id, so the next retry can name its parent."""

    def __init__(self, warehouse: Warehouse, run_id: str, model: str) -> None:
        self.archive, self.run_id, self.model = KernelArchive(warehouse), run_id, model

    def __call__(self, task_id: str, source: str, result: EvalResult, parent: str | None, step: int) -> str:
        candidate = Candidate(source, "grpo", parents=(parent,) if parent else ())
        self.archive.record(task_id, candidate, result, self.run_id, generation=step, model=self.model)
        return kernel_id(source)

