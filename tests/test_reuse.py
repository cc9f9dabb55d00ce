"""A re-run after a killed one: verdicts already stored for the same kernel, task and protocol come back from
the warehouse instead of being evaluated again, and nothing is stored twice; any change to the protocol, or a
verdict that blames the machine, evaluates again."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Candidate
from hipforge.agents.reuse import ReusingExecutor
from hipforge.execution.config import EvalConfig
from hipforge.execution.protocol import protocol_key
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from hipforge.store import Warehouse

TASK = "task source"
PROTOCOL = protocol_key(EvalConfig())


class CountingExecutor:
    backend, workers = "cpu", 2

    def __init__(self) -> None:
        self.asked: list[str] = []

    def evaluate(self, candidate_source: str, task_source: str) -> EvalResult:
        self.asked.append(candidate_source)
        return EvalResult(Verdict.INCORRECT, "evaluated now", protocol=PROTOCOL)

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        for i, (candidate, task) in enumerate(items):
            yield i, self.evaluate(candidate, task)


def _stored(warehouse: Warehouse, source: str, verdict: Verdict, protocol: str = PROTOCOL) -> str:
    timing = Timing(1.0, 1.0, 1.0, 0.0, 1)
    result = EvalResult(verdict, "from the killed run", backend="cpu", protocol=protocol, runtime=timing,
                        ref_eager=timing, speedup_eager=1.0)
    return KernelArchive(warehouse).record("t1", Candidate(source, "offline"), result, "killed-run")


def test_a_rerun_reuses_what_the_killed_run_finished_and_stores_nothing_twice(warehouse: Warehouse) -> None:
    eval_id = _stored(warehouse, "kernel A", Verdict.CORRECT)
    inner = CountingExecutor()
    executor = ReusingExecutor(inner, warehouse, {TASK: "t1"}, PROTOCOL)
    results = dict(executor.evaluate_many([("kernel A", TASK), ("kernel B", TASK)]))
    assert inner.asked == ["kernel B"] and executor.reused == 1
    assert results[0].verdict == Verdict.CORRECT and results[0].reused_from == eval_id
    assert results[0].message == "from the killed run" and results[1].message == "evaluated now"
    archive = KernelArchive(warehouse)
    with warehouse.connect(read_only=True) as con:
        before = con.execute("SELECT count(*) FROM evaluations").fetchone()[0]
    assert archive.record("t1", Candidate("kernel A", "offline"), results[0], "rerun") == eval_id
    with warehouse.connect(read_only=True) as con:
        assert con.execute("SELECT count(*) FROM evaluations").fetchone()[0] == before
        assert con.execute("SELECT run_id FROM evaluations WHERE eval_id = ?", [eval_id]).fetchone()[0] == "killed-run"
    assert executor.evaluate("kernel A", TASK).reused_from == eval_id and inner.asked == ["kernel B"]


def test_another_protocol_a_timeout_or_an_unknown_task_evaluates_again(warehouse: Warehouse) -> None:
    _stored(warehouse, "kernel A", Verdict.CORRECT, protocol=protocol_key(EvalConfig(timed_trials=3)))
    _stored(warehouse, "kernel T", Verdict.TIMEOUT)
    inner = CountingExecutor()
    executor = ReusingExecutor(inner, warehouse, {TASK: "t1"}, PROTOCOL)
    list(executor.evaluate_many([("kernel A", TASK), ("kernel T", TASK), ("kernel A", "another task")]))
    assert inner.asked == ["kernel A", "kernel T", "kernel A"] and executor.reused == 0


def test_the_protocol_key_follows_what_judges_not_where_it_runs() -> None:
    base = EvalConfig()
    assert protocol_key(replace(base, cache_dir="/elsewhere")) == protocol_key(base)
    assert protocol_key(replace(base, timed_trials=base.timed_trials + 1)) != protocol_key(base)
    assert protocol_key(replace(base, tolerances={"float32": (1e-2, 1e-2)})) != protocol_key(base)
