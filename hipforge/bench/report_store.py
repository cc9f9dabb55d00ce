"""A report into the warehouse: its kernels archived, its rows stored (store.reports), each kernel's lineage and
the preset a checkpoint under report was trained with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hipforge.agents.archive import KernelArchive
from hipforge.bench.models import CHECKPOINT_PREFIX, ModelSpec
from hipforge.bench.report import TaskOutcome, level_rows, strict_result, task_row
from hipforge.store import Warehouse
from hipforge.store.checkpoints import hyperparameters
from hipforge.store.lineage import LineageNode, lineage
from hipforge.store.reports import latest_levels, save_report

Row = dict[str, Any]


def record_report(warehouse: Warehouse, run_id: str, spec: ModelSpec, task_set: str, backend: str, arch: str,
                  outcomes: Sequence[TaskOutcome], protocol: str) -> tuple[list[Row], list[Row]]:
    """Archive every evaluated kernel (its verdict at 1e-4, the archive's standard) with its lineage, then
    store the report's task and level rows, each with what it measured (backend, arch, protocol, size);
    returns both."""
    archive, rows = KernelArchive(warehouse), []
    for outcome in outcomes:
        row = task_row(outcome)
        row["eval_id"] = (archive.record(outcome.task.task_id, outcome.candidate, strict_result(outcome.result),
                                         run_id, generation=0, model=spec.model or spec.key)
                          if outcome.candidate and outcome.result else None)
        row["size"] = "full" if outcome.task.eval_source(backend) == outcome.task.source else "smoke"
        rows.append(row)
    levels = [dict(r, size=",".join(sorted({t["size"] for t in rows if t["level"] == r["level"]})))
              for r in level_rows(rows)]
    save_report(warehouse, run_id, spec.key, task_set, backend, arch, rows, levels, protocol)
    # where they were measured goes with the rows, as it does with stored ones: tables and captions name it
    return rows, [dict(r, backend=backend, arch=arch, protocol=protocol) for r in levels]


def _collect(node: LineageNode, relation: str) -> list[str]:
    found = [node.id] if node.relation == relation else []
    return found + [x for child in node.children for x in _collect(child, relation)]


def kernel_lineage(warehouse: Warehouse, kernel_ids: Sequence[str]) -> list[Row]:
    """Per kernel: its task, parents, evaluations with their Dagster runs, and checkpoints trained on it."""
    out = []
    for kid in dict.fromkeys(kernel_ids):
        up, down = lineage(warehouse, kid, "ancestors"), lineage(warehouse, kid, "descendants")
        parents = [c for c in up.children if c.relation in ("evolved_from", "inspired_by")]
        evaluations = [(c.id, c.label, c.run_id) for c in down.children if c.relation == "evaluated_by"]
        out.append({"kernel_id": kid, "task": _collect(up, "translated_from"),
                    "parents": [f"{c.relation}:{c.id}" for c in parents], "evaluations": evaluations,
                    "checkpoints": _collect(down, "trained_into")})
    return out


def checkpoint_preset(warehouse: Warehouse, model: str) -> str | None:
    """The training preset a report's checkpoint model (checkpoint:<id>) was trained with, as its row records it;
    None for other models and for rows written before the preset was recorded."""
    if not model.startswith(CHECKPOINT_PREFIX):
        return None
    value = hyperparameters(warehouse, model.removeprefix(CHECKPOINT_PREFIX))
    return value.get("preset") if isinstance(value, dict) else None


def opening_order(warehouse: Warehouse, models: Sequence[str]) -> list[str]:
    """The models in the order to materialize their reports so that the asset page opens on the most meaningful.
    Dagster's asset page opens on its Overview, which shows the latest materialization of any partition; it has
    no setting for another. Embedded-preset checkpoints go first (their scores check that the pipeline runs, no
    more), then the other models (the offline agents, LLMs), then trained checkpoints; each group keeps the given
    order (the models partitions' order of creation: the newest checkpoint last)."""
    def rank(model: str) -> int:
        if not model.startswith(CHECKPOINT_PREFIX):
            return 1
        embedded = warehouse.path.exists() and checkpoint_preset(warehouse, model) == "embedded"
        return 0 if embedded else 2

    return sorted(models, key=rank)


def meaningful_report(warehouse: Warehouse, models: Sequence[str], model: str) -> str | None:
    """The model whose report to read instead of `model`'s when `model` is an embedded-preset checkpoint: the last
    in opening order of the models with a stored report, unless that is an embedded-preset checkpoint too."""
    if checkpoint_preset(warehouse, model) != "embedded":
        return None
    reported = set(latest_levels(warehouse))
    ranked = opening_order(warehouse, [m for m in models if m in reported])
    return ranked[-1] if ranked and checkpoint_preset(warehouse, ranked[-1]) != "embedded" else None
