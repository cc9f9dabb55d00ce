"""Re-verify each task's best kernel on the current executor and toolchain; flag verdicts that changed.

A new evaluation is stored for every kernel (so a kernel that now fails stops being anyone's best: the
archive trusts only kernels that never failed on a backend) and one `reverifications` row says whether
its verdict changed.
"""

from __future__ import annotations

from typing import Any

from hipforge.agents.archive import KernelArchive
from hipforge.execution.executor import Executor
from hipforge.execution.record import evaluation_row
from hipforge.store import Warehouse
from hipforge.store.evaluations import store_reverifications
from hipforge.store.tasks import task_sources

Row = dict[str, Any]


def reverify_best(warehouse: Warehouse, executor: Executor, run_id: str, limit: int = 0) -> tuple[list[Row], int]:
    """(one row per re-verified kernel, how many best kernels had no stored task source to run)."""
    best = KernelArchive(warehouse).per_task_best(backend=executor.backend)
    sources = task_sources(warehouse)
    runnable = [b for b in best if b["task_id"] in sources]
    skipped = len(best) - len(runnable)
    runnable = runnable[:limit] if limit > 0 else runnable

    def eval_source(task_id: str) -> str:  # kernels are written for the full size; cpu runs the smoke scale
        full, smoke = sources[task_id]
        return (smoke or full) if executor.backend == "cpu" else full

    items = [(b["source"], eval_source(b["task_id"])) for b in runnable]
    rows, evaluations, edges = [], [], []
    for index, result in executor.evaluate_many(items):
        old = runnable[index]
        evaluation = evaluation_row(old["kernel_id"], old["task_id"], result)
        evaluations.append(evaluation)
        edges.append({"child_id": evaluation["eval_id"], "parent_id": old["kernel_id"], "relation": "evaluated_by"})
        rows.append({"kernel_id": old["kernel_id"], "task_id": old["task_id"], "previous_eval_id": old["eval_id"],
                     "eval_id": evaluation["eval_id"], "previous_verdict": old["verdict"],
                     "verdict": result.verdict.value, "changed": result.verdict.value != old["verdict"],
                     "backend": executor.backend})
    rows.sort(key=lambda r: r["task_id"])
    store_reverifications(warehouse, evaluations, edges, rows, run_id)
    return rows, skipped
