"""The one way a stage runs: every translator or evolver, offline or LLM, goes through `StageRunner`.

The runner hands each agent a `Verifier` for its task. Evaluations are memoised by (candidate, task source),
so an agent that evaluates its own attempts is never judged twice, and every evaluation, rejection, skip and
decline goes to a `Sink`: the archive recorder in the assets, nothing in a report (which keeps the returned
outcomes). Translated candidates an agent did not evaluate are judged together through the executor's pool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from hipforge.agents.base import AgentTask, Candidate, Declined, Evolver, Translator
from hipforge.execution.executor import Executor
from hipforge.execution.verdict import EvalResult, Verdict

if TYPE_CHECKING:
    from hipforge.agents.judge.offline import PlausibilityReport

Progress = Callable[[int, int, str], None]
T = TypeVar("T")


@dataclass(frozen=True)
class StageTask:
    """A task as a stage runs it: kernels are written for the full-size source; the cpu backend checks them
    on the smoke-scaled one."""

    task_id: str
    name: str
    source: str
    smoke_source: str
    group: str = ""  # origin, with the mode for synthetic tasks: what rates are reported per
    level: int = 0  # KernelBench's level, for reports

    def agent_task(self) -> AgentTask:
        return AgentTask(self.task_id, self.name, self.source)

    def eval_source(self, backend: str) -> str:
        return self.smoke_source if backend == "cpu" else self.source


@dataclass
class TaskOutcome:
    """A task's result in one stage: the translator's candidate (or why none), or the evolution's best."""

    task: StageTask
    candidate: Candidate | None = None
    declined: str | None = None
    result: EvalResult | None = None

    @property
    def correct(self) -> bool:
        return self.result is not None and self.result.verdict == Verdict.CORRECT


class Sink:
    """Where a stage's results go; this one keeps nothing (a report reads the returned outcomes)."""

    def evaluated(self, task: StageTask, candidate: Candidate, result: EvalResult, generation: int) -> None:
        """One evaluation of a candidate for the task."""

    def rejected(self, task: StageTask, candidate: Candidate, report: PlausibilityReport) -> None:
        """The plausibility judge kept a candidate off the GPU."""

    def skipped(self, task: StageTask, why: str) -> None:
        """A proposal was not evaluated (no code, a near-duplicate)."""

    def declined(self, task: StageTask, reason: str) -> None:
        """No candidate for the task."""


def better(result: EvalResult, than: EvalResult | None) -> bool:
    """Correct beats anything else; among correct results the larger speedup over eager wins."""
    if result.verdict != Verdict.CORRECT:
        return than is None
    if than is None or than.verdict != Verdict.CORRECT:
        return True
    return (result.speedup_eager or 0.0) > (than.speedup_eager or 0.0)


class TaskVerifier:
    """The `Verifier` of one task: evaluates through the runner's memo and tells the sink everything."""

    def __init__(self, runner: StageRunner, task: StageTask) -> None:
        self.runner, self.task = runner, task
        self.best: tuple[Candidate, EvalResult] | None = None  # the best this stage saw for the task
        self.reasons: list[str] = []  # why the agent declined

    def evaluate(self, candidate: Candidate, generation: int = 0) -> EvalResult:
        result = self.runner.judge(candidate.source, self.task)
        with self.runner.lock:
            self.runner.sink.evaluated(self.task, candidate, result, generation)
            if better(result, self.best[1] if self.best else None):
                self.best = (candidate, result)
        return result

    def reject(self, candidate: Candidate, report: PlausibilityReport) -> None:
        with self.runner.lock:
            self.runner.sink.rejected(self.task, candidate, report)

    def skip(self, why: str) -> None:
        with self.runner.lock:
            self.runner.sink.skipped(self.task, why)

    def decline(self, why: str) -> None:
        self.reasons.append(why)


class StageRunner:
    """Runs translators and evolvers over tasks on one executor, results to one sink."""

    def __init__(self, executor: Executor, sink: Sink | None = None) -> None:
        self.executor, self.sink = executor, sink or Sink()
        self.workers = max(1, getattr(executor, "workers", 0) or 1)  # LLM calls in flight
        self.lock = threading.Lock()  # one sink writer at a time: DuckDB takes one write transaction per file
        self.judged: dict[tuple[str, str], EvalResult] = {}

    def judge(self, source: str, task: StageTask) -> EvalResult:
        key = (source, task.eval_source(self.executor.backend))
        with self.lock:
            known = self.judged.get(key)
        if known is None:
            known = self.executor.evaluate(*key)
            with self.lock:
                self.judged[key] = known
        return known

    def translate(self, tasks: list[StageTask], translator: Translator,
                  on_progress: Progress | None = None) -> list[TaskOutcome]:
        """A candidate (or a reasoned decline) per task, each one evaluated: by the agent itself through its
        verifier, or by the executor's pool together with the others afterwards."""
        def one(task: StageTask) -> TaskOutcome:
            verifier = TaskVerifier(self, task)
            made = translator.translate(task.agent_task(), verifier)
            if isinstance(made, Declined):
                self.sink_declined(task, made.reason)
                return TaskOutcome(task, declined=made.reason)
            outcome = TaskOutcome(task, made)
            with self.lock:
                outcome.result = self.judged.get((made.source, task.eval_source(self.executor.backend)))
            return outcome

        workers = self.workers if translator.side_by_side else 1
        outcomes = list(self._each(tasks, one, workers, on_progress, "wrote"))
        pending = [o for o in outcomes if o.candidate is not None and o.result is None]
        items = [(o.candidate.source, o.task.eval_source(self.executor.backend)) for o in pending]  # type: ignore[union-attr]
        for done, (index, result) in enumerate(self.executor.evaluate_many(items), 1):
            outcome = pending[index]
            outcome.result = result
            with self.lock:
                self.judged[items[index]] = result
                self.sink.evaluated(outcome.task, outcome.candidate, result, 0)  # type: ignore[arg-type]
            if on_progress:
                on_progress(done, len(pending), f"evaluated {outcome.task.name}")
        return outcomes

    def evolve(self, tasks: list[StageTask], evolver: Evolver, starts: Mapping[str, tuple[Candidate, EvalResult]],
               on_progress: Progress | None = None) -> list[TaskOutcome]:
        """Each task from its starting kernel (`starts` by task id); the outcome is the best kernel the stage
        saw for it, the start included. A task without a start is declined."""
        def one(task: StageTask) -> TaskOutcome:
            start = starts.get(task.task_id)
            if start is None:
                reason = f"no verified kernel on the {self.executor.backend} backend to start from"
                self.sink_declined(task, reason)
                return TaskOutcome(task, declined=reason)
            verifier = TaskVerifier(self, task)
            verifier.best = start
            evolver.evolve(task.agent_task(), start, verifier)
            for reason in verifier.reasons[:1]:  # the first says why; the rest repeat it
                self.sink_declined(task, reason)
            best, result = verifier.best
            return TaskOutcome(task, best, result=result)

        return list(self._each(tasks, one, self.workers if evolver.side_by_side else 1, on_progress, "evolved"))

    def sink_declined(self, task: StageTask, reason: str) -> None:
        with self.lock:
            self.sink.declined(task, reason)

    @staticmethod
    def _each(tasks: list[StageTask], one: Callable[[StageTask], T], workers: int, on_progress: Progress | None,
              verb: str) -> Iterable[T]:
        """`one` over the tasks, `workers` side by side, in task order, with progress per finished task."""
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done, (task, out) in enumerate(zip(tasks, pool.map(one, tasks), strict=True), 1):
                if on_progress:
                    on_progress(done, len(tasks), f"{verb} {task.name}")
                yield out
