"""Where the pipeline's stages put their results: every evaluation in the archive, every rejection in the
lessons' table, and a summary of the stage for the asset's metadata."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Candidate
from hipforge.agents.judge.offline import PlausibilityReport
from hipforge.agents.lessons import record_rejection
from hipforge.agents.runner import Sink, StageTask, TaskOutcome
from hipforge.execution.verdict import EvalResult
from hipforge.store import Warehouse
from hipforge.store.tasks import accepted_task_rows


@dataclass
class StageSummary:
    verdicts: Counter[str] = field(default_factory=Counter)
    declined: list[tuple[str, str]] = field(default_factory=list)  # (task, reason)
    speedups: dict[str, float] = field(default_factory=dict)  # task -> best speedup over eager
    groups: dict[str, Counter[str]] = field(default_factory=dict)  # group -> tasks, correct, declined
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (task, why): written but never evaluated
    evaluations: int = 0
    seconds: float = 0.0

    def rates_rows(self) -> list[dict[str, str | int | float]]:
        """Per group (origin), how many tasks got a correct kernel: rows for a table."""
        return [{"origin": g, "tasks": c["tasks"], "correct": c["correct"], "declined": c["declined"],
                 "correct_rate": round(c["correct"] / max(c["tasks"], 1), 4)} for g, c in sorted(self.groups.items())]

    def correct_rate(self) -> float:
        """Of every task the stage took on, the share that got a correct kernel."""
        tasks = sum(c["tasks"] for c in self.groups.values())
        return sum(c["correct"] for c in self.groups.values()) / max(tasks, 1)

    def count_outcomes(self, outcomes: list[TaskOutcome]) -> None:
        """Per group, the tasks and how many got a correct kernel or none; per task, its best speedup."""
        for outcome in outcomes:
            group = self.groups.setdefault(outcome.task.group, Counter())
            group["tasks"] += 1
            group["correct"] += outcome.correct
            group["declined"] += outcome.declined is not None
            if outcome.correct and outcome.result.speedup_eager is not None:  # type: ignore[union-attr]
                self.speedups[outcome.task.name] = outcome.result.speedup_eager  # type: ignore[union-attr]


class ArchiveRecorder(Sink):
    """Every evaluation archived under the run (generation 0 for translations), every judged rejection kept
    for the summarizer, the declines and the skipped proposals listed in the summary."""

    def __init__(self, archive: KernelArchive, run_id: str, judge: str = "") -> None:
        self.archive, self.run_id, self.judge = archive, run_id, judge
        self.summary = StageSummary()
        self.started = time.monotonic()  # a recorder lives for one stage

    def finish(self, outcomes: list[TaskOutcome]) -> StageSummary:
        """The stage's summary, with its outcomes counted and the seconds since the recorder was made."""
        self.summary.count_outcomes(outcomes)
        self.summary.seconds = time.monotonic() - self.started
        return self.summary

    def evaluated(self, task: StageTask, candidate: Candidate, result: EvalResult, generation: int) -> None:
        self.archive.record(task.task_id, candidate, result, self.run_id, generation=generation)
        self.summary.verdicts[result.verdict.value] += 1
        self.summary.evaluations += 1

    def rejected(self, task: StageTask, candidate: Candidate, report: PlausibilityReport) -> None:
        record_rejection(self.archive.warehouse, task.task_id, candidate, report, self.judge, self.run_id)
        self.summary.rejected.append((task.name, f"{report.score}: {'; '.join(report.reasons)}"))

    def skipped(self, task: StageTask, why: str) -> None:
        self.summary.rejected.append((task.name, why))

    def declined(self, task: StageTask, reason: str) -> None:
        self.summary.declined.append((task.name, reason))


def accepted_tasks(warehouse: Warehouse, origins: list[str], limit: int = 0) -> list[StageTask]:
    tasks = [StageTask(*row) for row in accepted_task_rows(warehouse, origins)]
    return tasks[:limit] if limit > 0 else tasks
