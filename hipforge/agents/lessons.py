"""The summarizer's inputs in the warehouse: the pipeline's failure logs (failed evaluations with their compile
logs and verdict messages, candidates the plausibility judge kept off the GPU). Its output, the lessons table,
is hipforge.store.lessons: `latest_lessons` there is what every prompt that wants lessons reads."""

from __future__ import annotations

from hipforge.agents.base import Candidate
from hipforge.agents.judge.offline import PlausibilityReport
from hipforge.agents.summarizer.offline import Failure, failures_from_warehouse
from hipforge.execution.record import kernel_id
from hipforge.store import Warehouse
from hipforge.store.lessons import insert_rejection, recent_rejections

REJECTED = "rejected"  # the verdict a plausibility rejection gets among the failures


def record_rejection(warehouse: Warehouse, task_id: str, candidate: Candidate, report: PlausibilityReport,
                     judge: str, run_id: str) -> None:
    """One candidate the judge kept off the GPU, with its source: it was never evaluated, so nothing else has it."""
    insert_rejection(warehouse, task_id, kernel_id(candidate.source), candidate.source, candidate.agent, judge,
                     report.score, "; ".join(report.reasons) or "no reasons given", run_id)


def pipeline_failures(warehouse: Warehouse, limit: int = 2000) -> list[Failure]:
    """The newest `limit` failed evaluations and the newest `limit` plausibility rejections."""
    if not warehouse.path.exists():
        return []
    failures = failures_from_warehouse(warehouse, limit=limit)
    return failures + [Failure(REJECTED, f"the plausibility judge {judge} scored it {score}: {reasons}")
                       for judge, score, reasons in recent_rejections(warehouse, limit)]
