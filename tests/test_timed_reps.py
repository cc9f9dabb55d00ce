"""Timed trials of R forwards: R chosen by the parent from its own clock and capped by memory, calibration
per R, every forward on fresh inputs and every forward's outputs checked, the timing check per forward.

The cpu backend keeps one forward per trial by default; the evaluator cases here ask for the most forwards
(reps_target_ms far above any forward) so that the R > 1 path runs end to end on the cpu backend."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from hipforge.execution import judge as judge_module
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.execution.job_common import rep_seeds
from hipforge.execution.judge import Judge
from hipforge.execution.timed_batches import TIMED_BATCHES
from hipforge.execution.trials import (
    REFILL_MIN_REPS,
    REFILL_REPS,
    TIMED_COMPARED,
    compared_sample,
    plan,
    refill_reps,
    timed_batch,
)
from hipforge.execution.verdict import Verdict
from hipforge.execution.wallclock import REPS, WallClock, allowed_reps
from tests.corpus import entries
from tests.test_trust_boundary import CONFIG, around

MOST = EvalConfig(**{**CONFIG.to_dict(), "reps_target_ms": 1e6})  # always the largest calibrated R
PLAIN = EvalConfig(**{**MOST.to_dict(), "adversarial": False, "second_size": False})
ONE_FORWARD = EvalConfig(**{**PLAIN.to_dict(), "reps_target_ms": 0.0})
MB = 1 << 20


# -- the parent's choices, on numbers ---------------------------------------------------------------
def test_rep_seeds_start_at_the_go_seed_and_are_distinct() -> None:
    seeds = rep_seeds(12345, 64)
    assert seeds[0] == 12345 and len(set(seeds)) == 64
    assert seeds == rep_seeds(12345, 64) and rep_seeds(12345, 1) == [12345]
    assert all(0 <= s < 1 << 31 for s in seeds)
    assert not set(seeds[1:]) & set(rep_seeds(12346, 64))


def test_allowed_reps_by_backend_and_memory() -> None:
    assert allowed_reps(EvalConfig(backend="cpu"), 1024) == (1,)  # the cpu backend keeps one forward
    assert allowed_reps(EvalConfig(backend="cuda"), 1024) == REPS
    assert allowed_reps(EvalConfig(backend="cuda"), 100 * MB) == (1, 4)  # 16 x 100 MB is over 512 MB
    assert allowed_reps(EvalConfig(backend="cuda"), 600 * MB) == (1,)
    assert allowed_reps(EvalConfig(backend="cuda", reps_memory_mb=64), 4 * MB) == (1, 4, 16)
    assert allowed_reps(MOST, 1024) == REPS


def clock_with(reps: tuple[int, ...] = REPS, **cfg: object) -> WallClock:
    clock = WallClock(EvalConfig(backend="cuda", **cfg), reps)
    for r in reps:  # the protocol: 0.3 ms per trial plus 0.05 ms per forward
        for extra in (0.0, 0.01, 0.2):
            clock.add(r, 0.3 + 0.05 * r + extra, calibrating=True)
    return clock


def test_the_refill_probe_takes_fewer_forwards_where_the_device_is_small_for_the_task() -> None:
    """KernelBench L1 relu (6 GB in, 6 GB out per forward) on an 80 GB GPU: four kept outputs ran the honest
    kernel out of memory; the probe keeps the two it needs there, four wherever they fit in an eighth."""
    gb = 2**30
    assert refill_reps(12 * gb, 80 * 1024) == REFILL_MIN_REPS == 2
    assert refill_reps(12 * gb, 141 * 1024) == REFILL_MIN_REPS
    assert refill_reps(3 * gb, 80 * 1024) == 3
    assert refill_reps(2 * gb, 80 * 1024) == REFILL_REPS == 4
    assert refill_reps(2**20, 16 * 1024) == REFILL_REPS
    assert refill_reps(0, 80 * 1024) == REFILL_REPS  # not known: as before
    refill = [t for t in plan((1, 2), 1, [], False, refill_reps(12 * gb, 80 * 1024)) if t.purpose == "refill"]
    assert [t.reps for t in refill] == [REFILL_MIN_REPS]


def test_r_is_the_fewest_forwards_that_reach_the_target() -> None:
    clock = clock_with()
    assert clock.choose(3.0) == 1 and clock.choose(0.5) == 4 and clock.choose(0.2) == 16
    assert clock.choose(0.01) == 64 and clock.choose(-0.2) == 64  # capped at the largest calibrated R
    assert clock_with((1, 4)).choose(0.01) == 4  # capped by memory


def test_r_comes_from_the_parents_walls_of_the_earlier_trials() -> None:
    clock = clock_with()
    clock.add(1, 0.35 + 0.2)  # a single forward's trial: 0.2 ms beyond the no-op's fastest 0.35
    clock.add(1, 0.35 + 0.9)
    assert clock.per_forward(1) == pytest.approx(0.2)
    assert clock.first_choice() == 16  # 16 x 0.2 ms reaches 2 ms


def test_a_forward_fast_only_in_the_timed_trials_is_timed_again_at_a_larger_r() -> None:
    clock = clock_with()
    clock.add(1, 0.35 + 3.0)  # slow in the earlier trials: R = 1
    assert clock.first_choice() == 1
    clock.add(1, 0.35 + 0.01)  # then fast
    assert clock.rerun(1, 3.0) == 64
    clock.add(64, 0.3 + 3.2 + 64 * 0.05)
    assert clock.rerun(64, 0.05) is None


def test_a_reported_time_too_short_for_r_to_resolve_is_timed_at_the_r_that_does() -> None:
    clock = clock_with()
    clock.add(1, 0.35 + 3.0)  # 3 ms a forward in the parent's clock (a busy device's): one forward reaches 2 ms
    assert clock.first_choice() == 1 and clock.rerun(1, 2.5) is None
    assert clock.rerun(1, 0.3) == 16 and clock.rerun(1, 0.01) == 64  # a claim of less buys the R that resolves it
    capped = clock_with((1, 4))
    capped.add(1, 0.35 + 3.0)
    assert capped.rerun(1, 0.01) == 4  # no R beyond what memory allows


def test_the_check_is_per_forward_and_the_slack_is_shared_by_the_forwards() -> None:
    clock = clock_with()
    clock.add(64, 0.3 + 3.2 + 64 * 0.1)  # 0.1 ms per forward beyond the protocol
    assert clock.per_forward(64) == pytest.approx(0.1)
    assert clock.contradiction(0.09, 64) is None
    message = clock.contradiction(0.01, 64)  # a tenfold lie
    assert message and "64 forwards per trial" in message
    # the same lie about one forward is lost in one trial's slack
    clock.add(1, 0.35 + 0.1)
    assert clock.contradiction(0.01, 1) is None



def test_a_forward_reported_faster_than_doing_nothing_is_contradicted() -> None:
    """A tiny kernel's forward is a few microseconds beyond the protocol: a tenfold lie about its events'
    interval stays above half of that, but not above half of the interval the events take around nothing."""
    clock = clock_with()
    clock.add(64, 0.3 + 3.2 + 64 * 0.004)  # 4 us a forward beyond the protocol
    assert clock.contradiction(0.0031, 64) is None  # a tenth of an honest 31 us report, with no floor known
    for _ in range(3):
        clock.add_noop_report(64, 0.02)  # the events around a no-op took 20 us (before the candidate existed)
    clock.add_noop_report(64, 0.05)  # load only adds: the fastest counts
    assert clock.contradiction(0.031, 64) is None  # the honest report: the no-op's interval plus the forward
    message = clock.contradiction(0.0031, 64)
    assert message and "a forward that does nothing reports 0.02 ms" in message
    summary = clock.summary(64)
    assert summary["seen_ms"] == pytest.approx(0.004) and summary["noop_ms"] == 0.02
    assert summary["walls_ms"] == [3.756, 3.756] and summary["calibration_ms"] == [3.5, 3.51]
    # calibration walls above every trial's (on a loaded H200, seen came out at -0.35 ms a forward): the
    # no-op's floor still holds
    loaded = clock_with()
    loaded.add(64, 1.0)  # under the calibration's fastest 3.5 ms
    loaded.add_noop_report(64, 0.025)
    assert loaded.contradiction(0.036, 64) is None and loaded.contradiction(0.0047, 64)


def test_the_slack_grows_with_the_protocols_own_cost() -> None:
    """A no-op trial of 11 ms (GB-size inputs drawn, outputs copied and checksummed) jitters by more than a cheap
    one: an honest 0.9 ms forward seen 1.4 ms above its report (measured on the H200) is kept there, and the same
    gap is contradicted beside a cheap protocol. A report under what the slack leaves is still contradicted."""
    big = WallClock(EvalConfig(backend="cuda"), (1,))
    for wall in (11.0, 11.3):
        big.add(1, wall, calibrating=True)
    big.add_noop_report(1, 0.03)
    big.add(1, 11.0 + 2.3)
    assert big.contradiction(0.9, 1) is None
    assert "saw 2.3 ms per forward" in (big.contradiction(0.03, 1) or "")
    cheap = clock_with((1,))
    cheap.add(1, 0.35 + 2.3)
    cheap.add_noop_report(1, 0.03)
    assert "saw 2.3 ms per forward" in (cheap.contradiction(0.9, 1) or "")
    cpu = WallClock(EvalConfig(backend="cpu"), (1,))  # the cpu backend's times only rank: its own slack
    for wall in (0.35, 0.36):
        cpu.add(1, wall, calibrating=True)
    cpu.add(1, 0.35 + 40.0)
    assert cpu.contradiction(12.0, 1) is None


def test_timed_trials_of_a_batch_share_r_and_some_are_shipped_whole() -> None:
    batch = timed_batch(9, 10, 2, 16)
    assert [t.id for t in batch] == list(range(9, 19)) and {t.reps for t in batch} == {16}
    assert sum(t.full for t in batch) == 2 and len({t.seed for t in batch}) == 10
    assert all("reps" not in t.message() for t in batch)  # R comes with go, not with prepare
    assert all(t.compared for t in batch)  # fewer than TIMED_COMPARED: every one


def test_a_large_batch_compares_a_random_sample_that_holds_the_whole_ones() -> None:
    batches = [timed_batch(0, 100, 2, 1) for _ in range(2)]
    for batch in batches:
        assert sum(t.compared for t in batch) == TIMED_COMPARED and sum(t.full for t in batch) == 2
        assert all(t.compared for t in batch if t.full)
        assert all("compared" not in t.message() for t in batch)  # the candidate is told nothing of the sample
    assert [t.compared for t in batches[0]] != [t.compared for t in batches[1]]  # drawn anew each batch


def test_where_the_fastest_trial_counts_every_timed_trial_is_compared() -> None:
    """The cpu backend's time is its fastest trial: a candidate that skips the work in one unsampled timed
    trial would set it, so there the sample is every trial (GPUs' median needs half of them wrong)."""
    assert compared_sample("cpu", 100) == 100 and compared_sample("cpu", 5) == 5
    assert compared_sample("cuda", 100) == TIMED_COMPARED and compared_sample("rocm", 10) == 10
    assert all(t.compared for t in timed_batch(0, 100, 2, 1, compared_sample("cpu", 100)))


# -- through the evaluator (cpu backend) ------------------------------------------------------------
def test_an_honest_kernel_runs_r_forwards_per_timed_trial() -> None:
    result = around("relu", "return honest(self, x)", config=MOST)
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.integrity["timed_reps"] == REPS[-1]
    assert result.integrity["checked"]["timed"] == MOST.timed_trials
    # cpu: every batch beside the calibrator's no-op trials (pairing.py); elsewhere only a batch timed again
    assert result.integrity["paired_calibration"] is (MOST.backend == "cpu" or result.integrity["timed_batches"] > 1)


def test_every_forward_gets_inputs_of_its_own() -> None:
    """Counted by the candidate itself: only the poison probe repeats an input (the first seed's); the refill
    probe's two forwards hold values of their own in one tensor; each timed trial's warm-up forward (cpu:
    pairing.warm_up) and the last forward, the op trace's, are on inputs of their own too."""
    body = ("self.seen = getattr(self, 'seen', set())\nself.seen.add(x.numpy().tobytes())\n"
            "self.calls = getattr(self, 'calls', 0) + 1\nprint(f'inputs {len(self.seen)} {self.calls}', flush=True)\n"
            "return honest(self, x)")
    result = around("relu", body, config=PLAIN)
    assert result.verdict == Verdict.CORRECT, result.message
    distinct, calls = map(int, re.findall(r"inputs (\d+) (\d+)", result.output_tail)[-1])
    warmups_seeds_refill_poison_trace = PLAIN.warmup + len(PLAIN.seeds) + REFILL_REPS + 1 + 1
    timed = PLAIN.timed_trials * result.integrity["timed_batches"]  # a batch contradicted throughout is retimed
    assert calls == warmups_seeds_refill_poison_trace + timed * (REPS[-1] + 1)
    assert distinct == calls - 1


def test_an_output_buffer_reused_by_every_forward_of_a_trial_is_honest() -> None:
    body = ("if not hasattr(self, 'buf'):\n    self.buf = torch.empty_like(x)\n"
            "self.buf.copy_(honest(self, x))\nreturn self.buf")
    result = around("relu", body, config=MOST)
    assert result.verdict == Verdict.CORRECT, result.message


def test_the_previous_forwards_output_within_a_timed_trial_is_caught() -> None:
    """Right on every trial of one forward; within a timed trial every other forward repeats the last one's
    output (a cache that cannot fire across trials, whose inputs are fresh, but could inside one)."""
    body = ("self.calls = getattr(self, 'calls', 0) + 1\n"
            "if self.calls > 7 and self.calls % 2:  # after a warm-up, the five seeds and the poison probe\n"
            "    return self.last\nself.last = honest(self, x)\nreturn self.last")
    result = around("relu", body, config=PLAIN)
    assert result.verdict == Verdict.HACKED and result.hack_check == "result_caching", result.message


# the candidate's process sees a rebound clock (judge_patch) unless the candidate silences that check too, as
# native code could; then the parent's own clock is what is left
SILENCED = ("_dyn = sys.modules['.'.join(['hipforge', 'execution', 'antihack_dynamic'])]\n"
            "_dyn.patched = lambda before: None\n"
            "_clock = sys.modules['.'.join(['hipforge', 'execution', 'forward_clock'])]\n")


def test_a_faked_clock_is_contradicted_per_forward() -> None:
    prelude = SILENCED + "_clock.ForwardClock.elapsed = lambda self, start, end: 0.0\n"
    result = around("relu", "time.sleep(0.003)\nreturn honest(self, x)", prelude=prelude, config=MOST)
    assert result.verdict == Verdict.HACKED and result.hack_check == "timing_mismatch", result.message
    assert "forwards per trial" in result.message
    assert f"{TIMED_BATCHES} batches of timed trials" in result.message  # the lie survives every batch


def test_a_clock_lie_one_forward_cannot_resolve_is_contradicted_at_the_r_it_calls_for() -> None:
    """3 ms a forward, reported as 30 µs by a patched clock (as native code can through the C API): R = 1 in
    the parent's walls, whose slack on the cpu backend (2 ms and the calibration's spread) hides the lie; the
    claimed time calls for R = 64, where it does not hide."""
    prelude = SILENCED + ("_elapsed = _clock.ForwardClock.elapsed\n"
                          "_clock.ForwardClock.elapsed = lambda self, start, end: _elapsed(self, start, end) / 100\n")
    config = EvalConfig(**{**PLAIN.to_dict(), "reps_target_ms": 2.0})
    result = around("relu", "time.sleep(0.003)\nreturn honest(self, x)", prelude=prelude, config=config)
    assert result.verdict == Verdict.HACKED and result.hack_check == "timing_mismatch", result.message
    assert f"{REPS[-1]} forwards per trial" in result.message


def test_trials_held_back_by_a_busy_machine_are_timed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every trial up to the end of the first timed batch is 0.3 s late in the parent's clock (as when other
    evaluations keep the device busy); the honest kernel is contradicted, timed again, and kept. One forward
    per trial: at R = 64 the delay is 5 ms a forward, which a loaded 2-core machine's ReLU can reach."""
    timed_batches: list[int] = []

    def held_back(run: Callable[..., None], timed: bool) -> Callable[..., None]:
        def held(self: Judge, trials: list, failures: dict) -> None:
            timed_batches.extend([1] if timed else [])
            count = self.threads
            if len(timed_batches) <= 1:
                self.threads = lambda: (time.sleep(0.3), count())[1]  # inside the trial's wall, outside forward
            try:
                run(self, trials, failures)
            finally:
                self.threads = count
        return held

    monkeypatch.setattr(Judge, "run_all", held_back(Judge.run_all, False))
    monkeypatch.setattr(Judge, "run_timed", held_back(Judge.run_timed, True))
    result = around("relu", "return honest(self, x)", config=ONE_FORWARD)
    assert result.verdict == Verdict.CORRECT, result.message
    # two at least: a batch whose readings contradict every cpu claim is timed again too
    assert result.integrity["timed_reps"] == 1 and result.integrity["timed_batches"] >= 2
    assert result.integrity["paired_calibration"]


def test_a_machine_busier_after_the_calibration_than_during_it_loses_no_honest_kernel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From the end of the calibration on, every trial's wall is 30 ms longer (the machine got busy: other
    evaluations' builds and compiles); the first batch is contradicted, and the batch timed again is weighed
    against no-op trials taken beside it in the calibrator, which the same load holds back. On the cpu backend
    every batch is weighed so (pairing.py): the first is not contradicted."""
    calibrate, busy = Judge.calibrate, []
    ask = judge_module.Party.ask

    def quiet_then_busy(self: Judge) -> None:
        calibrate(self)
        busy.append(True)

    def slowed(self: judge_module.Party, message: dict, expect: str) -> dict:
        if busy and message.get("op") == "commit":
            time.sleep(0.03)  # inside the trial's wall, outside forward
        return ask(self, message, expect)

    monkeypatch.setattr(Judge, "calibrate", quiet_then_busy)
    monkeypatch.setattr(judge_module.Party, "ask", slowed)
    result = around("relu", "return honest(self, x)", config=ONE_FORWARD)
    assert result.verdict == Verdict.CORRECT, result.message
    batches = 1 if ONE_FORWARD.backend == "cpu" else 2
    assert result.integrity["paired_calibration"] and result.integrity["timed_batches"] == batches
    assert result.integrity["seen_ms"] < 10  # the 30 ms are in both sides of the paired batch


def test_the_corpus_clock_patch_is_caught_with_r_forwards() -> None:
    """(timing_patch_cxx's tenfold lie about a ReLU is not: on the cpu backend the per-forward noise at R = 64,
    0.25 ms, is more than the kernel's own time.)"""
    entry = next(e for e in entries(redteam=True) if e.name == "timing_patch_dynamic")
    result = evaluate(entry.candidate_source, entry.task_source, MOST)
    assert result.verdict == Verdict.HACKED and result.hack_check == "timing_patch", result.message


@pytest.mark.parametrize("name", ["workspace_reuse", "row_sum", "relu"])
def test_honest_kernels_stay_correct_with_r_forwards(name: str) -> None:
    entry = next(e for e in entries(redteam=True) if e.name == name)
    result = evaluate(entry.candidate_source, entry.task_source, MOST)
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.integrity["timed_reps"] > 1
