"""The one stage runner: translators and evolvers of either kind, evaluations memoised and all sent to the sink."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from hipforge.agents.base import AgentTask, Candidate, Declined, Verifier
from hipforge.agents.evolver.offline import OfflineEvolver
from hipforge.agents.judge.offline import PlausibilityReport
from hipforge.agents.runner import Sink, StageRunner, StageTask
from hipforge.execution.verdict import EvalResult, Timing, Verdict

TASKS = [StageTask(f"t{i}", f"task{i}", f"full{i}", f"smoke{i}", group="reference", level=1) for i in range(3)]


class CountingExecutor:
    """Verdicts by candidate text ("bad" in it: incorrect; "fast<k>": speedup k), and every call counted."""

    def __init__(self, backend: str = "cpu", workers: int = 2) -> None:
        self.backend, self.workers = backend, workers
        self.single: list[tuple[str, str]] = []
        self.batched: list[tuple[str, str]] = []

    @staticmethod
    def verdict(source: str) -> EvalResult:
        if "bad" in source:
            return EvalResult(Verdict.INCORRECT, "max abs error 1")
        speed = float(source.split("fast")[1]) if "fast" in source else 1.0
        return EvalResult(Verdict.CORRECT, "ok", backend="cpu", speedup_eager=speed,
                          runtime=Timing.from_samples([1.0 / speed]))

    def evaluate(self, candidate_source: str, task_source: str) -> EvalResult:
        self.single.append((candidate_source, task_source))
        return self.verdict(candidate_source)

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        items = list(items)
        self.batched += items
        for index in reversed(range(len(items))):  # a pool answers in any order
            yield index, self.verdict(items[index][0])


class Heard(Sink):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def evaluated(self, task: StageTask, candidate: Candidate, result: EvalResult, generation: int) -> None:
        self.events.append(("evaluated", task.task_id, candidate.source, result.verdict.value, generation))

    def rejected(self, task: StageTask, candidate: Candidate, report: PlausibilityReport) -> None:
        self.events.append(("rejected", task.task_id, candidate.source))

    def skipped(self, task: StageTask, why: str) -> None:
        self.events.append(("skipped", task.task_id, why))

    def declined(self, task: StageTask, reason: str) -> None:
        self.events.append(("declined", task.task_id, reason))


class Compiler:
    """An offline-style translator: writes a candidate and leaves its evaluation to the runner."""

    name, side_by_side = "compiler", False

    def translate(self, task: AgentTask, verifier: Verifier) -> Candidate | Declined:
        if task.task_id == "t2":
            return Declined(self.name, "unsupported op: grid_sample")
        return Candidate(f"kernel for {task.task_id}", self.name)


class SelfChecking:
    """An LLM-style translator: evaluates its attempts, is turned down once by its judge, returns the last."""

    name, side_by_side = "self-checking", True

    def __init__(self) -> None:
        self.together = threading.Barrier(len(TASKS), timeout=20)  # broken unless every task runs at once

    def translate(self, task: AgentTask, verifier: Verifier) -> Candidate | Declined:
        self.together.wait()
        verifier.reject(Candidate(f"implausible {task.task_id}", self.name), PlausibilityReport(0.0, ["no kernel"]))
        verifier.evaluate(Candidate(f"bad {task.task_id}", self.name))
        final = Candidate(f"good {task.task_id}", self.name)
        verifier.evaluate(final)
        return final


def test_an_offline_translation_is_judged_in_one_batch_on_the_backends_variant() -> None:
    executor, heard = CountingExecutor(), Heard()
    outcomes = StageRunner(executor, heard).translate(TASKS, Compiler())
    assert [o.task.task_id for o in outcomes] == ["t0", "t1", "t2"]  # task order, whatever the pool's order
    assert not executor.single and executor.batched == [("kernel for t0", "smoke0"), ("kernel for t1", "smoke1")]
    assert all(o.correct for o in outcomes[:2]) and outcomes[2].declined == "unsupported op: grid_sample"
    assert sorted(e for e in heard.events if e[0] == "evaluated") == [
        ("evaluated", "t0", "kernel for t0", "correct", 0), ("evaluated", "t1", "kernel for t1", "correct", 0)]
    assert ("declined", "t2", "unsupported op: grid_sample") in heard.events


def test_a_self_checking_translator_is_never_judged_twice_and_every_attempt_is_heard() -> None:
    executor, heard, agent = CountingExecutor(backend="cuda", workers=3), Heard(), SelfChecking()
    outcomes = StageRunner(executor, heard).translate(TASKS, agent)
    assert not executor.batched and len(executor.single) == 6  # two attempts per task, none again
    assert ("bad t0", "full0") in executor.single  # a GPU backend runs the full size
    assert all(o.correct and o.candidate.source == f"good {o.task.task_id}" for o in outcomes)
    kinds = sorted(e[0] for e in heard.events)
    assert kinds == ["evaluated"] * 6 + ["rejected"] * 3
    assert not agent.together.broken  # side by side: the three tasks ran at once


class Climber:
    """An evolver that proposes two children per task: one faster, one wrong; declines task t1's search."""

    name, side_by_side = "climber", True

    def evolve(self, task: AgentTask, start: tuple[Candidate, EvalResult], verifier: Verifier) -> None:
        if task.task_id == "t1":
            verifier.decline("every mutation was rejected by the generator")
            return
        verifier.evaluate(Candidate(f"{task.task_id} fast3", self.name), generation=1)
        verifier.evaluate(Candidate(f"{task.task_id} bad fast9", self.name), generation=1)
        verifier.skip("near-duplicate (similarity 0.999)")


def test_evolution_keeps_the_best_correct_kernel_the_start_included() -> None:
    executor, heard = CountingExecutor(), Heard()
    start = Candidate("start fast2", "compiler")
    starts = {"t0": (start, CountingExecutor.verdict("start fast2")), "t1": (start, CountingExecutor.verdict("x"))}
    outcomes = StageRunner(executor, heard).evolve(TASKS, Climber(), starts)
    best = {o.task.task_id: o for o in outcomes}
    assert best["t0"].candidate.source == "t0 fast3" and best["t0"].result.speedup_eager == 3.0  # not the wrong 9x
    assert best["t1"].candidate is start and best["t1"].declined is None  # nothing better: the start stays
    assert best["t2"].candidate is None and "no verified kernel on the cpu backend" in best["t2"].declined
    assert ("declined", "t1", "every mutation was rejected by the generator") in heard.events
    assert ("skipped", "t0", "near-duplicate (similarity 0.999)") in heard.events
    assert [e[4] for e in heard.events if e[0] == "evaluated"] == [1, 1]


def test_the_offline_evolver_restarts_from_its_translation_which_the_memo_answers() -> None:
    from hipforge.agents.prompts import EXAMPLE_TASK
    from hipforge.agents.translator.offline import OfflineTranslator

    executor, heard = CountingExecutor(), Heard()
    runner = StageRunner(executor, heard)
    relu = [StageTask("relu", "relu", EXAMPLE_TASK, EXAMPLE_TASK)]
    (translated,) = runner.translate(relu, OfflineTranslator())
    (evolved,) = runner.evolve(relu, OfflineEvolver(budget=3, children=2), {"relu": (translated.candidate,
                                                                                     translated.result)})
    first_trial = [e for e in heard.events if e[0] == "evaluated"][1]
    assert first_trial[2] == translated.candidate.source  # the evolver's first trial is the translation ...
    assert executor.batched.count((translated.candidate.source, EXAMPLE_TASK)) == 1  # ... judged only once
    assert translated.candidate.source not in [s for s, _ in executor.single]
    assert evolved.correct and len(executor.single) == 2  # the two mutated children
