"""Builds and timed phases on one machine's cores (flock locks, across threads and processes)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import pytest

from hipforge.execution import quiet


@pytest.fixture(autouse=True)
def private_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quiet.tempfile, "gettempdir", lambda: str(tmp_path))


def _in_thread(fn: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_a_timed_phase_waits_for_the_build_in_flight_and_a_later_build_waits_for_it() -> None:
    events: list[str] = []
    build_started = threading.Event()

    def build(name: str, hold: float) -> None:
        with quiet.building():
            events.append(f"{name} start")
            build_started.set()
            time.sleep(hold)
            events.append(f"{name} end")

    def timed() -> None:
        with quiet.timing(True):
            events.append("timed start")
            time.sleep(0.2)
            events.append("timed end")

    first = _in_thread(lambda: build("first", 0.4))
    build_started.wait(5)
    phase = _in_thread(timed)
    time.sleep(0.1)  # the timed phase is waiting for the first build now
    second = _in_thread(lambda: build("second", 0.0))
    for thread in (first, phase, second):
        thread.join(10)
    assert events == ["first start", "first end", "timed start", "timed end", "second start", "second end"]


def test_a_small_cpu_machine_times_every_phase_alone_and_others_retry_alone() -> None:
    alone, retry = quiet.phases("cpu", cores=2)
    assert alone and retry is nullcontext  # the cpu phase holds the cores already: no second lock
    assert not quiet.phases("cpu", cores=16)[0]  # builds yield by niceness there
    alone, retry = quiet.phases("cuda", cores=2)
    assert not alone
    done = threading.Event()

    def build() -> None:
        with quiet.building():
            time.sleep(0.3)
            done.set()

    _in_thread(build)
    time.sleep(0.05)
    with retry():
        assert done.is_set()  # the retry waited for the build in flight
