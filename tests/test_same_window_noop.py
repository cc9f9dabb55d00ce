"""The cpu backend bounds the candidate's CPU-time claims by no-op trials of the same rounds (since
paired-cpu-time-v5, hipforge/execution/pairing.py): each round's no-op runs in the calibrator, read from outside
as the candidate's trial is, with the candidate's job stopped; the calibration before the import, minutes
earlier under other load, is no longer subtracted."""

from __future__ import annotations

from typing import Any

import pytest

from hipforge.execution import judge as judge_module
from hipforge.execution import pairing
from hipforge.execution.judge import Judge
from hipforge.execution.pairing import STOPPED, CandidateCpu
from hipforge.execution.timed_batches import TimedBatches
from hipforge.execution.verdict import EvalResult, Verdict
from tests.test_paired_timing import PLAIN
from tests.test_trust_boundary import around

LOAD_MS = 0.5  # CPU the protocol costs more per trial once the calibration is done: far above relu's forward
GAP_MS = 5.0  # one batch's candidate readings above its no-op trials: far above the protocol's own jitter


def _loaded_after_calibration(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """From the end of the calibration on, every reading that spans a commit (the candidate's and the
    calibrator's alike) holds LOAD_MS more, as a protocol slowed by other load on the cores would. Returns the
    candidate's thread states seen as each of the calibrator's no-op forwards is asked for."""
    calibrate, ask, cpu_ms = Judge.calibrate, judge_module.Party.ask, pairing.cpu_ms
    busy, load, parties, states = [], [0.0], {}, []

    def quiet_then_busy(self: Judge) -> None:
        calibrate(self)
        busy.append(True)

    def asked(self: judge_module.Party, message: dict[str, Any], expect: str) -> dict[str, Any]:
        parties[self.name] = self
        if self.name == "calibrator" and message.get("op") == "go":
            states.append({s for s, _ in parties["candidate"].session.server.threads().values()})
        if busy and message.get("op") == "commit" and self.name in ("candidate", "calibrator"):
            load[0] += LOAD_MS
        return ask(self, message, expect)

    monkeypatch.setattr(Judge, "calibrate", quiet_then_busy)
    monkeypatch.setattr(judge_module.Party, "ask", asked)
    monkeypatch.setattr(pairing, "cpu_ms", lambda pids: cpu_ms(pids) + load[0])
    return states


def _claims(result: EvalResult) -> tuple[float, int]:
    assert result.runtime is not None, result
    return result.runtime.min_ms, result.integrity["cpu_claims_bounded"]


def test_an_honest_claim_is_kept_when_the_batch_ran_under_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The load lands in the readings and in the no-op trials of the same rounds alike, so the bound stays
    near the forward's cost: relu keeps a time of its own (a few hundredths of a ms), where the calibration's
    no-op (before the load) would have set every claim to LOAD_MS or more. The candidate's job is stopped
    through each no-op trial."""
    states = _loaded_after_calibration(monkeypatch)
    result = around("relu", "return honest(self, x)", config=PLAIN)
    assert result.verdict == Verdict.CORRECT, result.message
    fastest, bounded = _claims(result)
    assert fastest < LOAD_MS / 2 and bounded < PLAIN.timed_trials, (fastest, bounded)
    assert len(states) == PLAIN.timed_trials * result.integrity["timed_batches"]
    assert all(s and s <= set(STOPPED) for s in states), states


def test_a_lie_is_still_bounded_under_the_same_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every claim rewritten (in the parent) to a hundredth of a microsecond, as a native clock hook would make
    it, by a forward that burns milliseconds: the bound, the cheapest reading less the cheapest no-op of the
    same rounds, still gives it a time of that order."""
    _loaded_after_calibration(monkeypatch)
    ask = judge_module.Party.ask

    def lying(self: judge_module.Party, message: dict[str, Any], expect: str) -> dict[str, Any]:
        answer = ask(self, message, expect)
        return {**answer, "ms": 1e-5, "cpu_ms": 1e-5} if self.name == "candidate" and expect == "returned" \
            else answer

    monkeypatch.setattr(judge_module.Party, "ask", lying)
    slow = "for _ in range(40):\n    torch.mm(torch.ones(128, 128), torch.ones(128, 128))\nreturn honest(self, x)"
    result = around("relu", slow, config=PLAIN)
    fastest, bounded = _claims(result)
    assert fastest > 1.0 and bounded == PLAIN.timed_trials, (fastest, bounded)


def test_a_lie_gains_at_most_how_far_the_two_minima_of_one_protocol_fall_apart() -> None:
    """Protocol trials of 1.00-1.10 ms in both jobs, a forward of 0.2 ms claimed as zero: the bound is the
    forward less the gap between the no-op's cheapest and the candidate protocol's cheapest, never below
    the forward by more than the no-op trials' spread."""
    protocol = [1.06, 1.00, 1.10, 1.03]
    for noop, own in ((protocol, protocol[::-1]), (protocol, [p + 0.02 for p in protocol]),
                      ([p + 0.03 for p in protocol], protocol)):
        cpu = CandidateCpu(freeze=lambda: None)  # type: ignore[arg-type,return-value]
        cpu.noop = [(1, ms) for ms in noop]
        cpu.timed = [(1, p + 0.2, 0.0) for p in own]
        gain = 0.2 - min(cpu.forwards())
        assert gain == pytest.approx(min(noop) - min(own))
        assert gain <= max(noop) - min(noop)


def test_a_claim_within_the_no_op_spread_below_the_bound_stands() -> None:
    """The bound is a difference of two noisy minima: a claim below it by less than the window's no-op spread
    is not contradicted (an honest relu's claims sat there on loaded cores), one below it by more is replaced
    by the bound. So a lie gains at most the gap between the minima plus the spread."""
    protocol = [1.06, 1.00, 1.10, 1.03]  # spread: median 1.045 over the cheapest 1.00
    cpu = CandidateCpu(freeze=lambda: None)  # type: ignore[arg-type,return-value]
    cpu.noop = [(1, ms) for ms in protocol]
    cpu.timed = [(1, p + 0.2, claim) for p, claim in zip(protocol, (0.2, 0.16, 0.15, 0.0), strict=True)]
    assert cpu.bound() == pytest.approx(0.2) and cpu.spread() == pytest.approx(0.045)
    assert cpu.forwards() == pytest.approx([0.2, 0.16, 0.2, 0.2]) and cpu.bounded() == 2
    assert 0.2 - min(cpu.forwards()) <= cpu.spread()


def test_a_batch_whose_readings_contradicted_every_honest_claim_is_timed_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch's candidate readings each hold GAP_MS more than the no-op trials beside them (as a
    sibling thread's load, landing in one job's CPU time alone, once made them): every honest claim is below
    that batch's bound. The batch is timed again, and the gap is in no later batch's readings."""
    run_timed, ask, cpu_ms = TimedBatches.run_timed, judge_module.Party.ask, pairing.cpu_ms
    batches, load = [0], [0.0]

    def counted(self: TimedBatches, *args: Any) -> None:
        batches[0] += 1
        run_timed(self, *args)

    def asked(self: judge_module.Party, message: dict[str, Any], expect: str) -> dict[str, Any]:
        if batches[0] == 1 and self.name == "candidate" and message.get("op") == "commit":
            load[0] += GAP_MS
        return ask(self, message, expect)

    monkeypatch.setattr(TimedBatches, "run_timed", counted)
    monkeypatch.setattr(judge_module.Party, "ask", asked)
    monkeypatch.setattr(pairing, "cpu_ms", lambda pids: cpu_ms(pids) + load[0])
    result = around("relu", "return honest(self, x)", config=PLAIN)
    assert result.verdict == Verdict.CORRECT, result.message
    fastest, bounded = _claims(result)
    assert result.integrity["timed_batches"] >= 2 and load[0] == GAP_MS * PLAIN.timed_trials
    assert fastest < GAP_MS / 20, (fastest, bounded)  # the forward's own cost: the gap did not set it
