"""The archive manager (agent 7): every evaluated candidate with its lineage, and the per-task best.

Rows come back as dicts (evaluation columns plus the kernel's source, agent, model and generation;
`detail` parsed from JSON). A plausibility report, when given, is kept in the evaluation's detail
under "plausibility", the candidate's code-generation params under "params".
"""

from __future__ import annotations

import re
from dataclasses import asdict

from hipforge.agents.base import Candidate, Feedback
from hipforge.agents.judge.offline import PlausibilityReport
from hipforge.execution.gate import hip_sources
from hipforge.execution.record import evaluation_row, kernel_id
from hipforge.execution.verdict import EvalResult
from hipforge.store import Warehouse, kernels
from hipforge.store.kernels import Row

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
        return kernels.best_evaluation(self.warehouse, task_id, backend)

    def best_start(self, task_id: str, backend: str) -> tuple[Candidate, EvalResult] | None:
        """The task's best kernel on the backend as evolution starts from it."""
        best = self.best(task_id, backend)
        if best is None:
            return None
        return Candidate(best["source"], best["agent"]), EvalResult.from_dict(best["detail"])

    def per_task_best(self, backend: str | None = None) -> list[Row]:
        return kernels.per_task_best(self.warehouse, backend)

    def history(self, task_id: str) -> list[Row]:
        """Every evaluation of the task in the order it was recorded, with the kernel's evolved_from parents."""
        return kernels.task_history(self.warehouse, task_id)

    def recent_failures(self, task_id: str, n: int = 3) -> list[Feedback]:
        """The last n failed attempts as the feedback an agent is re-prompted with (newest first);
        a compile error's message is followed by the head of its compiler log."""
        feedback = []
        for row in kernels.recent_failures(self.warehouse, task_id, n):
            log = (row["detail"] or {}).get("compile_log") if row["verdict"] == "compile_error" else ""
            message = "\n".join(part for part in (row["message"], (log or "")[:2000]) if part)
            feedback.append(Feedback(row["source"], row["verdict"], message))
        return feedback

    def similar_verified(self, source: str, k: int = 3, task_id: str | None = None) -> list[Row]:
        """The k correct kernels whose HIP code is most like `source` (token-trigram Jaccard), most
        similar first, each with a `similarity`; the source itself is left out."""
        best_per_kernel: dict[str, Row] = {}
        for row in kernels.trusted_correct(self.warehouse, task_id):
            best_per_kernel.setdefault(row["kernel_id"], row)
        best_per_kernel.pop(kernel_id(source), None)
        query = _shingles(source)
        for row in best_per_kernel.values():
            row["similarity"] = _jaccard(query, _shingles(row["source"]))
        return sorted(best_per_kernel.values(), key=lambda r: -r["similarity"])[:k]


def _shingles(source: str) -> set[tuple[str, ...]]:
    """Token trigrams of the HIP code (the Python around it is the same boilerplate everywhere)."""
    tokens = _TOKEN.findall("\n".join(hip_sources(source)) or source)
    return {tuple(tokens[i:i + 3]) for i in range(max(len(tokens) - 2, 1))}


def _jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0
