"""The device lock: timed phases alone, untimed work side by side, and a waiting timed phase served before
sharers that arrive after it."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.device_lock import DeviceLock
from hipforge.execution.evaluate import evaluate
from hipforge.execution.judge import Judge
from hipforge.execution.verdict import Verdict
from tests.test_trust_boundary import CONFIG, HONEST


def fresh_lock() -> DeviceLock:
    return DeviceLock(f"test-{uuid.uuid4().hex}")


def most_at_once(hold: Callable[[], AbstractContextManager[None]], workers: int, seconds: float) -> int:
    """How many of ``workers`` threads were inside ``hold`` at once, each staying ``seconds``."""
    inside, most, count = [0], [0], threading.Lock()

    def work() -> None:
        with hold():
            with count:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(seconds)
            with count:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return most[0]


def test_shared_work_runs_side_by_side_and_timed_phases_one_at_a_time() -> None:
    lock = fresh_lock()
    assert most_at_once(lock.shared, 3, 0.2) == 3
    assert most_at_once(lock.exclusive, 4, 0.05) == 1


def test_a_timed_phase_waits_for_shared_work_and_shuts_out_work_that_comes_after_it() -> None:
    lock = fresh_lock()
    events: list[str] = []
    first_in = threading.Event()

    def first() -> None:
        with lock.shared():
            first_in.set()
            time.sleep(0.3)
            events.append("first shared done")

    def timed() -> None:
        with lock.exclusive():
            events.append("timed in")
            time.sleep(0.2)
            events.append("timed out")

    def later() -> None:
        with lock.shared():
            events.append("later shared in")

    a = threading.Thread(target=first)
    a.start()
    first_in.wait()
    b = threading.Thread(target=timed)
    b.start()
    time.sleep(0.1)  # the timed phase is waiting now
    c = threading.Thread(target=later)
    c.start()
    for t in (a, b, c):
        t.join()
    assert events == ["first shared done", "timed in", "timed out", "later shared in"]


def test_a_wait_behind_another_evaluations_timed_phase_is_no_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another evaluation holds the device alone for longer than the run timeout just as this one reaches its
    timed trials: the wait is not the candidate's time, so the honest kernel stays correct."""
    lock = fresh_lock()
    run_timed, held, released = Judge.run_timed, threading.Event(), threading.Event()

    def other_evaluation() -> None:
        with lock.exclusive():
            held.set()
            time.sleep(12)
        released.set()

    def behind_another(self: Judge, batch: list, failures: dict) -> None:
        if not held.is_set():
            threading.Thread(target=other_evaluation, daemon=True).start()
            held.wait()
        run_timed(self, batch, failures)

    monkeypatch.setattr(Judge, "run_timed", behind_another)
    config = EvalConfig(**{**CONFIG.to_dict(), "run_timeout_s": 8})
    entry = HONEST["relu"]
    result = evaluate(entry.candidate_source, entry.task_source, config, device_lock=lock)
    assert released.is_set() and result.verdict == Verdict.CORRECT, result.message


def test_a_timed_phase_waits_for_one_checked_trial_of_another_evaluation_not_all_of_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each checked trial takes its own shared hold: a timed phase that asks while another evaluation is in its
    checked trials gets the device once the trial under way ends (held for the whole phase, it waited for
    every trial left, and evaluations in flight took turns at a phase's length)."""
    lock = fresh_lock()
    one, in_trials, waited = Judge.one, threading.Event(), []

    def slow_trial(self: Judge, trial) -> str | None:  # noqa: ANN001
        in_trials.set()
        time.sleep(0.4)
        return one(self, trial)

    def timed_phase() -> None:
        in_trials.wait()
        asked = time.monotonic()
        with lock.exclusive():
            waited.append(time.monotonic() - asked)

    monkeypatch.setattr(Judge, "one", slow_trial)
    other = threading.Thread(target=timed_phase)
    other.start()
    entry = HONEST["relu"]
    result = evaluate(entry.candidate_source, entry.task_source, CONFIG, device_lock=lock)
    other.join()
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.integrity["checked"]["seed"] >= 5  # many trials of 0.4 s each came after the ask
    assert waited[0] < 1.2, waited
