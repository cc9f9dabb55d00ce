"""The archive manager (agent 7): every evaluated candidate with its lineage, and the per-task best.

Rows come back as dicts (evaluation columns plus the kernel's source, agent, model and generation;
`detail` parsed from JSON). A plausibility report, when given, is kept in the evaluation's detail
under "plausibility", the candidate's code-generation params under "params".
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

from hipforge.agents.base import Candidate, Feedback
from hipforge.agents.plausibility import PlausibilityReport
from hipforge.execution.gate import hip_sources
from hipforge.execution.record import evaluation_row, kernel_id
from hipforge.execution.verdict import EvalResult
from hipforge.store import Warehouse

Row = dict[str, Any]
_COLUMNS = "e.*, k.source, k.agent, k.model, k.generation"
_FROM = "FROM evaluations e JOIN kernels k ON k.kernel_id = e.kernel_id"
_SELECT = f"SELECT {_COLUMNS} {_FROM}"
# A kernel that ever failed on a backend is not trusted as that backend's best: a race or an
# off-by-one can pass some seeds and runs, and the best seeds the next generation.
_TRUSTED = """
    e.verdict = 'correct' AND NOT EXISTS (
        SELECT 1 FROM evaluations f WHERE f.kernel_id = e.kernel_id AND f.task_id = e.task_id
        AND f.backend = e.backend AND f.verdict <> 'correct')
"""
_FASTEST = "e.speedup_eager DESC NULLS LAST, e.runtime_ms ASC NULLS LAST, e.created_at"
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|[^\s\w]")


class KernelArchive:
    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse

    def record(
        self,
        task_id: str,
        candidate: Candidate,
        result: EvalResult,
        run_id: str,
        generation: int | None = None,
        plausibility: PlausibilityReport | None = None,
        model: str | None = None,
    ) -> str:
        """Kernel, evaluation and lineage edges in one transaction; returns the evaluation id."""
        if result.reused_from:  # judged and stored before (by a run that was killed): nothing new to write
            return result.reused_from
        kid = kernel_id(candidate.source)
        kernel = {"kernel_id": kid, "task_id": task_id, "source": candidate.source, "language": "hip",
                  "agent": candidate.agent, "model": model, "generation": generation}
        evaluation = evaluation_row(kid, task_id, result)
        extras = {"plausibility": asdict(plausibility) if plausibility else None, "params": candidate.params or None}
        evaluation["detail"] = result.to_dict() | {key: value for key, value in extras.items() if value}
        edges = [{"child_id": evaluation["eval_id"], "parent_id": kid, "relation": "evaluated_by"}]
        # Re-proposing a parent's exact source would be a self-loop: the content address is the same.
        edges += [{"child_id": kid, "parent_id": p, "relation": "evolved_from"} for p in candidate.parents if p != kid]
        if not candidate.parents:  # a first kernel comes straight from its task: lineage reaches the task
            edges.append({"child_id": kid, "parent_id": task_id, "relation": "translated_from"})
        edges += [{"child_id": kid, "parent_id": p, "relation": "inspired_by"}
                  for p in candidate.inspirations if p != kid]
        with self.warehouse.transaction() as con:
            self.warehouse.insert("kernels", [kernel], run_id, con=con)
            self.warehouse.insert("evaluations", [evaluation], run_id, con=con)
            self.warehouse.insert("lineage_edges", edges, run_id, con=con)
        return str(evaluation["eval_id"])

    def best(self, task_id: str, backend: str | None = None) -> Row | None:
        """The fastest trusted correct evaluation of the task (by speedup over eager, then runtime)."""
        sql = f"{_SELECT} WHERE e.task_id = ? AND {_TRUSTED}"
        params: list[Any] = [task_id]
        if backend:
            sql, params = sql + " AND e.backend = ?", [*params, backend]
        rows = self._rows(f"{sql} ORDER BY {_FASTEST} LIMIT 1", params)
        return rows[0] if rows else None

    def per_task_best(self, backend: str | None = None) -> list[Row]:
        where = f"{_TRUSTED} AND e.backend = ?" if backend else _TRUSTED
        sql = (f"{_SELECT} WHERE {where} QUALIFY row_number() OVER (PARTITION BY e.task_id ORDER BY {_FASTEST}) = 1"
               " ORDER BY e.task_id")
        return self._rows(sql, [backend] if backend else [])

    def history(self, task_id: str) -> list[Row]:
        """Every evaluation of the task in the order it was recorded, with the kernel's evolved_from parents."""
        parents = ("(SELECT coalesce(list(parent_id ORDER BY parent_id), []) FROM lineage_edges l"
                   " WHERE l.child_id = e.kernel_id AND l.relation = 'evolved_from') AS parents")
        sql = f"SELECT {_COLUMNS}, {parents} {_FROM} WHERE e.task_id = ? ORDER BY e.created_at, e.rowid"
        return self._rows(sql, [task_id])

    def recent_failures(self, task_id: str, n: int = 3) -> list[Feedback]:
        """The last n failed attempts as the feedback an agent is re-prompted with (newest first);
        a compile error's message is followed by the head of its compiler log."""
        rows = self._rows(f"{_SELECT} WHERE e.task_id = ? AND e.verdict <> 'correct' "
                          "ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?", [task_id, n])
        feedback = []
        for row in rows:
            log = (row["detail"] or {}).get("compile_log") if row["verdict"] == "compile_error" else ""
            message = "\n".join(part for part in (row["message"], (log or "")[:2000]) if part)
            feedback.append(Feedback(row["source"], row["verdict"], message))
        return feedback

    def similar_verified(self, source: str, k: int = 3, task_id: str | None = None) -> list[Row]:
        """The k correct kernels whose HIP code is most like `source` (token-trigram Jaccard), most
        similar first, each with a `similarity`; the source itself is left out."""
        # only what a prompt shows: the detail JSON (logs) of every correct evaluation would be the bulk
        columns = "e.eval_id, e.kernel_id, e.task_id, e.backend, e.runtime_ms, e.speedup_eager, k.source, k.agent"
        sql = f"SELECT {columns} {_FROM} WHERE {_TRUSTED}" + (" AND e.task_id = ?" if task_id else "")
        best_per_kernel: dict[str, Row] = {}
        for row in self._rows(f"{sql} ORDER BY {_FASTEST}", [task_id] if task_id else []):
            best_per_kernel.setdefault(row["kernel_id"], row)
        best_per_kernel.pop(kernel_id(source), None)
        query = _shingles(source)
        for row in best_per_kernel.values():
            row["similarity"] = _jaccard(query, _shingles(row["source"]))
        return sorted(best_per_kernel.values(), key=lambda r: -r["similarity"])[:k]

    def _rows(self, sql: str, params: list[Any]) -> list[Row]:
        if not self.warehouse.path.exists():  # nothing recorded yet: an empty archive, not an error
            return []
        with self.warehouse.connect(read_only=True) as con:
            cursor = con.execute(sql, params)
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
        for row in rows:
            if isinstance(row.get("detail"), str):
                row["detail"] = json.loads(row["detail"])
        return rows


def _shingles(source: str) -> set[tuple[str, ...]]:
    """Token trigrams of the HIP code (the Python around it is the same boilerplate everywhere)."""
    tokens = _TOKEN.findall("\n".join(hip_sources(source)) or source)
    return {tuple(tokens[i:i + 3]) for i in range(max(len(tokens) - 2, 1))}


def _jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0
