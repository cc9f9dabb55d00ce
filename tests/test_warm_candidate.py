"""The cpu backend's candidate forwards are timed warm (hipforge/execution/pairing.warm_up): one untimed forward
on throwaway inputs right before each timed trial, outside the parent's reading of it, and the same before each
no-op trial that reading is weighed against (the calibrator's, one per round)."""

from __future__ import annotations

from typing import Any

import pytest

from hipforge.execution import judge as judge_module
from hipforge.execution import timed_batches
from hipforge.execution.job_common import rep_seeds
from hipforge.execution.pairing import CandidateCpu
from hipforge.execution.verdict import Verdict
from hipforge.execution.wallclock import CALIBRATION_TRIALS
from tests.test_paired_timing import PLAIN
from tests.test_trust_boundary import around


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    """(party, op, message) of every message the parent sends, and ("parent", "stamp", {}) at each reading of the
    candidate's CPU time (its job stopped)."""
    ask, stamp, seen = judge_module.Party.ask, judge_module.stamp, []

    def asked(self: judge_module.Party, message: dict[str, Any], expect: str) -> dict[str, Any]:
        seen.append((self.name, str(message.get("op")), message))
        return ask(self, message, expect)

    def stamped(freeze: Any) -> float:
        seen.append(("parent", "stamp", {}))
        return stamp(freeze)

    monkeypatch.setattr(judge_module.Party, "ask", asked)
    monkeypatch.setattr(judge_module, "stamp", stamped)
    monkeypatch.setattr(CandidateCpu, "stamp", lambda self: stamped(self.freeze))
    return seen


def _trials(seen: list[tuple[str, str, dict[str, Any]]], party: str) -> list[list[tuple[str, dict[str, Any]]]]:
    """The party's messages and the readings after them (a reading is the last-asked party's), cut at each
    prepare."""
    trials: list[list[tuple[str, dict[str, Any]]]] = []
    last = ""
    for name, op, message in seen:
        if op == "prepare" and name == party:
            trials.append([])
        if trials and party in (name, last) and name in (party, "parent"):
            trials[-1].append((op, message))
        last = last if name == "parent" else name
    return trials


def test_each_timed_and_noop_trial_follows_a_warm_up_outside_its_reading_on_other_inputs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm-up, reading, go, commit, reading: the reading holds the trial's forward alone, for the timed trials
    and for the calibrator's no-op trials of the same rounds alike, so the two stay comparable. The warm-up's
    seed is none of the trial's forwards' seeds. The calibration before the import is warmed too (its walls)
    but not read; checked trials are not warmed (a check needs no time)."""
    seen = _recorded(monkeypatch)
    contradictions = iter(["the parent's clock disagrees"])  # once: a batch timed again follows
    monkeypatch.setattr(timed_batches.TimedBatches, "contradicted", lambda self: next(contradictions, None))
    result = around("relu", "return honest(self, x)", config=PLAIN)
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.integrity["timed_batches"] >= 2 and result.integrity["paired_calibration"]
    read = ["prepare", "warm", "stamp", "go", "commit", "stamp"]
    timed = noop = 0
    for trial in _trials(seen, "candidate"):
        prepare = trial[0][1]
        ops = [op for op, _ in trial]
        if prepare.get("noop"):
            assert ops[:4] == ["prepare", "warm", "go", "commit"], ops
            noop += 1
        elif prepare.get("timed"):
            assert ops[:6] == read, ops
            warm, go = trial[1][1], trial[3][1]
            assert warm["seed"] not in rep_seeds(go["seed"], go["reps"]) and warm["size"] == go["size"]
            timed += 1
        else:
            assert "warm" not in ops and "stamp" not in ops, ops
    batches = result.integrity["timed_batches"]
    assert timed == batches * PLAIN.timed_trials and noop == CALIBRATION_TRIALS  # cpu: R = 1 alone, before import
    calibrator = _trials(seen, "calibrator")
    assert len(calibrator) == batches * PLAIN.timed_trials  # one no-op trial per round of every batch
    for trial in calibrator:
        assert [op for op, _ in trial][:6] == read, trial


def test_the_warm_up_cannot_serve_the_timed_forward_from_a_cache_of_inputs() -> None:
    """A forward that returns a wrong result whenever its inputs equal the call's before (as a cache keyed on
    inputs would hand back a stored one) stays correct: the timed forward never sees its warm-up's inputs."""
    prelude = "_last = [None]\n"
    body = ("key = tuple(x.reshape(-1).tolist())\nrepeat = key == _last[0]\n_last[0] = key\n"
            "return honest(self, x) + 1.0 if repeat else honest(self, x)")
    result = around("relu", body, prelude=prelude, config=PLAIN)
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.integrity["checked"]["timed"] == PLAIN.timed_trials * result.integrity["timed_batches"]


def test_the_record_counts_the_claims_the_batch_bound_replaced() -> None:
    """cpu_claims_bounded: whether a speedup followed the candidate's claims or the protocol's jitter."""
    cpu = CandidateCpu(freeze=lambda: None)  # type: ignore[arg-type,return-value]
    cpu.noop = [(1, 1.0), (1, 1.05), (1, 1.1)]
    cpu.timed = [(1, 1.3, 0.2), (1, 1.4, 0.35), (1, 1.5, 0.27)]  # bound: 1.3 - 1.0; no-op spread: 0.05
    assert cpu.bound() == pytest.approx(0.3) and cpu.bounded() == 1  # 0.27 is within the spread of it
