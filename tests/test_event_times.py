"""The GPU scripts' event-timing loop (measure.event_times: scripts/gpu_gemm_measure.py, time_breakdown.py),
run here against stand-in events: the warm-ups untimed, the flush before every timed call and outside its
events, one time per trial."""

from __future__ import annotations

import pytest

from hipforge.execution import measure


def test_warmups_untimed_flush_before_each_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            assert enable_timing
            self.at = 0

        def record(self) -> None:
            self.at = len(log)
            log.append("record")

        def elapsed_time(self, end: Event) -> float:
            return float(end.at - self.at)

    class Flush:
        def zero_(self) -> None:
            log.append("flush")

    monkeypatch.setattr(measure, "_Event", Event)
    monkeypatch.setattr(measure, "cuda_sync", lambda: log.append("sync"))
    times = measure.event_times(lambda: log.append("call"), 2, 3, Flush())
    trial = ["flush", "record", "call", "record", "sync"]
    assert log == ["call", "call", "sync", *trial * 3]
    assert times == [2.0, 2.0, 2.0]  # each trial's events hold its call alone
    log.clear()
    assert measure.event_times(lambda: log.append("call"), 1, 2) == [2.0, 2.0]  # no flush given: none
    assert "flush" not in log
