"""The kernel stages with whichever agents the configuration picked.

Offline agents run exactly as `pipeline.translate_tasks` / `pipeline.evolve_tasks` always did. LLM agents
verify their own candidates inside their loops (the translator re-prompts with the verifier's error), so
here every evaluation is archived the moment it happens, every candidate the judge keeps off the GPU is
recorded, and a task whose calls keep failing after retries is declined without stopping the others.
A replay cache miss or a configuration error is not caught: the run must fail on those.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Candidate
from hipforge.agents.evolve import offline_generate
from hipforge.agents.lessons import record_rejection
from hipforge.agents.llm import Agents, LLMEvolver, LLMTranslator
from hipforge.agents.pipeline import (
    Progress,
    StageSummary,
    StoredTask,
    count_result,
    evolve_tasks,
    translate_tasks,
)
from hipforge.agents.plausibility import PlausibilityReport
from hipforge.execution.executor import Executor
from hipforge.execution.verdict import EvalResult
from hipforge.llm import LLMRetriesExhausted


def run_translation(agents: Agents, tasks: list[StoredTask], executor: Executor, archive: KernelArchive,
                    run_id: str, on_progress: Progress | None = None) -> StageSummary:
    if isinstance(agents.translator, LLMTranslator):
        return translate_with_llm(tasks, agents.translator, archive, run_id, workers=executor.workers,
                                  on_progress=on_progress)
    return translate_tasks(tasks, agents.translator, executor, archive, run_id, on_progress)


def run_evolution(agents: Agents, tasks: list[StoredTask], executor: Executor, archive: KernelArchive, run_id: str,
                  *, budget: int, children: int, seed: int, on_progress: Progress | None = None) -> StageSummary:
    if isinstance(agents.evolver, LLMEvolver):
        return evolve_with_llm(tasks, agents.evolver, executor.backend, archive, run_id, seed=seed,
                               on_progress=on_progress)
    return evolve_tasks(tasks, offline_generate, executor, archive, run_id, budget=budget, children=children,
                        seed=seed, workers=executor.workers, on_progress=on_progress)


class _Recorder:
    """Archive writes and summary updates of concurrent tasks, one at a time (DuckDB has one writer)."""

    def __init__(self, archive: KernelArchive, run_id: str, judge: str) -> None:
        self.archive, self.run_id, self.judge = archive, run_id, judge
        self.summary = StageSummary()
        self.lock = threading.Lock()

    def evaluated(self, task: StoredTask, candidate: Candidate, result: EvalResult, generation: int) -> None:
        with self.lock:
            self.archive.record(task.task_id, candidate, result, self.run_id, generation=generation)
            count_result(self.summary, task.name, result)

    def rejected(self, task: StoredTask, candidate: Candidate, report: PlausibilityReport) -> None:
        with self.lock:
            record_rejection(self.archive.warehouse, task.task_id, candidate, report, self.judge, self.run_id)
            self.summary.rejected.append((task.name, f"{report.score}: {'; '.join(report.reasons)}"))

    def declined(self, task: StoredTask, reason: str) -> None:
        with self.lock:
            self.summary.declined.append((task.name, reason))


def translate_with_llm(tasks: list[StoredTask], translator: LLMTranslator, archive: KernelArchive, run_id: str,
                       *, workers: int = 2, on_progress: Progress | None = None) -> StageSummary:
    """Tasks side by side (each one's prompts depend only on the task and the lessons, so the order does
    not change any answer); every attempt that reached the verifier is archived."""
    started = time.monotonic()
    record = _Recorder(archive, run_id, translator.judge.name if translator.judge else "")
    for task in tasks:
        record.summary.groups.setdefault(task.group, Counter())["tasks"] += 1

    def one(task: StoredTask) -> str:
        """The task's outcome: correct, declined, or failed (the verifier saw no correct attempt)."""
        agent = copy.copy(translator)  # per-task callbacks on a shallow copy: client and judge are shared
        agent.on_attempt = lambda c, r: record.evaluated(task, c, r, 0)
        agent.on_reject = lambda c, report: record.rejected(task, c, report)
        try:
            run = agent.run(task.agent_task())
        except LLMRetriesExhausted as err:
            record.declined(task, f"the model could not be reached: {err}")
            return "declined"
        if run.candidate is None:
            record.declined(task, f"no candidate reached the verifier in {len(run.history)} answers")
            return "declined"
        return "correct" if run.correct else "failed"

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for done, (task, outcome) in enumerate(zip(tasks, pool.map(one, tasks), strict=True), 1):
            record.summary.groups[task.group][outcome] += 1
            if on_progress:
                on_progress(done, len(tasks), task.name)
    record.summary.seconds = time.monotonic() - started
    return record.summary


def evolve_with_llm(tasks: list[StoredTask], evolver: LLMEvolver, backend: str, archive: KernelArchive, run_id: str,
                    *, seed: int = 0, on_progress: Progress | None = None) -> StageSummary:
    """Each task from its archived best kernel, one task after another: the evolver's prompts show the most
    similar verified kernels of the whole archive, so a task running beside it would change them."""
    started = time.monotonic()
    record = _Recorder(archive, run_id, evolver.judge.name if evolver.judge else "")
    for done, task in enumerate(tasks, 1):
        best = archive.best(task.task_id, backend)
        if best is None:
            record.declined(task, f"no verified kernel on the {backend} backend to start from")
            continue
        start = Candidate(best["source"], best["agent"])
        result = EvalResult.from_dict(best["detail"])
        agent = copy.copy(evolver)
        agent.seed = seed
        agent.on_node = lambda node, task=task: record.evaluated(task, node.candidate, node.result, node.generation)
        agent.on_reject = lambda c, report, task=task: record.rejected(task, c, report)
        try:
            run = agent.evolve(task.agent_task(), [(start, result)])
        except LLMRetriesExhausted as err:
            record.declined(task, f"the model could not be reached: {err}")
            continue
        # the judge's rejections came through on_reject; near-duplicates and answers without code did not
        record.summary.rejected += [(task.name, why) for _, why in run.rejected if not why.startswith("plausibility")]
        # the plot shows the task's best, the starting kernel included
        speedups = record.summary.speedups
        speedups[task.name] = max(speedups.get(task.name, 0.0), result.speedup_eager or 0.0)
        if on_progress:
            on_progress(done, len(tasks), task.name)
    record.summary.seconds = time.monotonic() - started
    return record.summary
