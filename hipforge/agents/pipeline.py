"""The kernel stages as plain functions: translate every task, then evolve the ones that came out correct."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import AgentTask, Candidate, Declined, Translator
from hipforge.agents.evolve import Evolution, Trial, evolve
from hipforge.agents.llm.translator import EvaluateFn
from hipforge.execution.executor import Executor
from hipforge.execution.verdict import EvalResult
from hipforge.store import Warehouse
from hipforge.store.tasks import accepted_task_rows
from hipforge.translate import GenParams

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class StoredTask:
    task_id: str
    name: str
    source: str  # full size: kernels are written for it
    smoke_source: str  # what the cpu backend runs
    group: str = ""  # origin, with the mode for synthetic tasks: what rates are reported per

    def agent_task(self) -> AgentTask:
        return AgentTask(self.task_id, self.name, self.source)

    def eval_source(self, backend: str) -> str:
        return self.smoke_source if backend == "cpu" else self.source


@dataclass
class StageSummary:
    verdicts: Counter[str] = field(default_factory=Counter)
    declined: list[tuple[str, str]] = field(default_factory=list)  # (task, reason)
    speedups: dict[str, float] = field(default_factory=dict)  # task -> best speedup over eager
    groups: dict[str, Counter[str]] = field(default_factory=dict)  # group -> tasks, correct, declined
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (task, why): written but never evaluated

    def rates_table(self) -> str:
        """Markdown: per group, how many tasks got a correct kernel."""
        rows = [f"| {g} | {c['tasks']} | {c['correct']} | {c['declined']} | {c['correct'] / max(c['tasks'], 1):.0%} |"
                for g, c in sorted(self.groups.items())]
        return "| tasks from | tasks | correct | declined | correct rate |\n|---|---|---|---|---|\n" + "\n".join(rows)
    evaluations: int = 0
    seconds: float = 0.0


def accepted_tasks(warehouse: Warehouse, origins: list[str], limit: int = 0) -> list[StoredTask]:
    tasks = [StoredTask(*row) for row in accepted_task_rows(warehouse, origins)]
    return tasks[:limit] if limit > 0 else tasks


def evaluator(tasks: list[StoredTask], executor: Executor) -> EvaluateFn:
    """What LLM agents call to verify a candidate: the executor on the task variant its backend runs."""
    by_id = {t.task_id: t for t in tasks}

    def evaluate_fn(source: str, task: AgentTask) -> EvalResult:
        return executor.evaluate(source, by_id[task.task_id].eval_source(executor.backend))

    return evaluate_fn


def translate_tasks(tasks: list[StoredTask], translator: Translator, executor: Executor, archive: KernelArchive,
                    run_id: str, on_progress: Progress | None = None) -> StageSummary:
    """One candidate per task (or a reasoned decline), every candidate evaluated and archived."""
    started, summary = time.monotonic(), StageSummary()
    made: list[tuple[StoredTask, Candidate]] = []
    for task in tasks:
        summary.groups.setdefault(task.group, Counter())["tasks"] += 1
        outcome = translator.translate(task.agent_task(), [])
        if isinstance(outcome, Declined):
            summary.declined.append((task.name, outcome.reason))
            summary.groups[task.group]["declined"] += 1
        else:
            made.append((task, outcome))
    items = [(c.source, t.eval_source(executor.backend)) for t, c in made]
    for done, (index, result) in enumerate(executor.evaluate_many(items), 1):
        task, candidate = made[index]
        archive.record(task.task_id, candidate, result, run_id, generation=0)
        count_result(summary, task.name, result)
        summary.groups[task.group]["correct"] += result.verdict.value == "correct"
        if on_progress:
            on_progress(done, len(made), task.name)
    summary.seconds = time.monotonic() - started
    return summary


def evolve_tasks(tasks: list[StoredTask], generate: Callable[[AgentTask, GenParams], Candidate | Declined],
                 executor: Executor, archive: KernelArchive, run_id: str, *, budget: int, children: int,
                 seed: int, workers: int, on_progress: Progress | None = None) -> StageSummary:
    """Evolve each task from the default parameters; tasks run side by side, their trials one by one."""
    started, summary = time.monotonic(), StageSummary()
    writing = threading.Lock()  # one archive writer at a time: DuckDB takes one write transaction per file

    def one(task: StoredTask) -> Evolution:
        def evaluate_candidate(candidate: Candidate) -> EvalResult:
            return executor.evaluate(candidate.source, task.eval_source(executor.backend))

        def keep(trial: Trial) -> None:
            with writing:
                    archive.record(task.task_id, trial.candidate, trial.result, run_id, generation=trial.generation)

        return evolve(task.agent_task(), generate, evaluate_candidate, budget=budget, children=children,
                      seed=seed, on_trial=keep)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for done, (task, run) in enumerate(zip(tasks, pool.map(one, tasks), strict=True), 1):
            for trial in run.trials:
                count_result(summary, task.name, trial.result)
            summary.declined += [(task.name, reason) for reason in run.declined[:1]]
            if on_progress:
                on_progress(done, len(tasks), task.name)
    summary.seconds = time.monotonic() - started
    return summary


def count_result(summary: StageSummary, task: str, result: EvalResult) -> None:
    summary.verdicts[result.verdict.value] += 1
    summary.evaluations += 1
    if result.speedup_eager is not None:
        summary.speedups[task] = max(summary.speedups.get(task, 0.0), result.speedup_eager)
