"""The cpu backend's paired timing (hipforge/execution/pairing.py): the reference's and the candidate's timed
trials alternate in one hold of the cores, the candidate's process stopped while the reference runs, each side
timed in CPU time (the candidate's read from outside), and the speedup is the ratio of the two sides' cheapest
trials of those rounds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from hipforge.execution import judge as judge_module
from hipforge.execution import protocol
from hipforge.execution.config import EvalConfig
from hipforge.execution.pairing import STOPPED, CandidateCpu, cpu_ms, frozen, paired_record
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from hipforge.sandbox.server import child_pids
from tests.test_trust_boundary import CONFIG, around

PLAIN = EvalConfig(**{**CONFIG.to_dict(), "adversarial": False, "second_size": False})


def test_reference_and_candidate_trials_alternate_with_the_candidate_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every timed trial of the candidate follows one of the reference's (after the reference's warm-ups), with
    no timing of the reference apart, and the candidate's launches run on one worker throughout the rounds;
    while the reference runs, every thread of the candidate's job is stopped."""
    ask, seen, parties = judge_module.Party.ask, [], {}

    def recorded(self: judge_module.Party, message: dict[str, Any], expect: str) -> dict[str, Any]:
        parties[self.name] = self
        op = message.get("op")
        if self.name == "reference" and op in ("time_one", "time"):
            states = {s for s, _ in parties["candidate"].session.server.threads().values()}
            seen.append((op, states))
        elif self.name == "candidate" and op == "prepare" and message.get("timed"):
            seen.append(("timed", set()))
        elif self.name == "candidate" and op == "timing":
            seen.append(("one worker" if message["on"] else "every worker", set()))
        return ask(self, message, expect)

    monkeypatch.setattr(judge_module.Party, "ask", recorded)
    result = around("relu", "return honest(self, x)", config=PLAIN)
    assert result.verdict == Verdict.CORRECT, result.message
    ops = [op for op, _ in seen]
    assert "time" not in ops  # no reference timing in a window of its own
    rounds = ["time_one", "timed"] * PLAIN.timed_trials
    batch = ["one worker", *rounds, "every worker"]  # the candidate's launches on one worker while timed
    first = ["one worker", *["time_one"] * PLAIN.warmup, *rounds, "every worker"]
    assert ops == first + batch * (result.integrity["timed_batches"] - 1)
    for op, states in seen:
        if op == "time_one":
            assert states and states <= set(STOPPED), states
    assert result.ref_eager and result.ref_eager.trials == PLAIN.timed_trials
    assert result.integrity["paired_timing"]["rounds"] == PLAIN.timed_trials
    assert result.speedup_eager == pytest.approx(result.ref_eager.min_ms / result.runtime.min_ms)
    assert "round by round" in result.message


def test_the_candidates_time_is_its_cpu_time_read_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the candidate's process says of its own time cannot take its cpu speedup below what the parent reads
    of its job's CPU time. Here every report, wall and CPU, is rewritten (in the parent) to a hundredth of a
    microsecond, as a native clock hook would make it; a candidate that burns milliseconds of CPU per
    forward keeps a time of that order, so its speedup stays far below 1."""
    ask = judge_module.Party.ask

    def lying(self: judge_module.Party, message: dict[str, Any], expect: str) -> dict[str, Any]:
        answer = ask(self, message, expect)
        lie = {"ms": 1e-5, "cpu_ms": 1e-5}
        return {**answer, **lie} if self.name == "candidate" and expect == "returned" else answer

    monkeypatch.setattr(judge_module.Party, "ask", lying)
    slow = "for _ in range(40):\n    torch.mm(torch.ones(128, 128), torch.ones(128, 128))\nreturn honest(self, x)"
    result = around("relu", slow, config=PLAIN)
    assert result.runtime is not None and result.runtime.min_ms > 1.0, result
    assert result.speedup_eager is not None and result.speedup_eager < 0.5, result


def test_cpu_ms_counts_every_thread_of_a_process_exited_ones_included() -> None:
    """The parent reads a job's CPU time by the kernel's clock of its process: work a thread did before it
    exited still counts, and a sleeping process adds nothing."""
    burn = ("import threading, time\n"
            "t = threading.Thread(target=lambda: sum(range(3_000_000)))\n"
            "t.start(); t.join()\nprint('done', flush=True)\ntime.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", burn], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "done"
        with open(f"/proc/{proc.pid}/stat") as f:
            ticks = sum(int(v) for v in f.read().rsplit(")", 1)[1].split()[11:13])
        first = cpu_ms([proc.pid])
        assert first >= ticks * 1000 / os.sysconf("SC_CLK_TCK") - 20  # the thread's work, to the tick
        assert first > 20  # three million additions in a thread that has exited
        time.sleep(0.2)
        assert cpu_ms([proc.pid]) - first < 5  # asleep
        assert cpu_ms([2**22 + 12345]) == 0.0  # no such process
    finally:
        proc.kill()
        proc.wait()


def test_cpu_speedups_never_read_or_fill_the_baseline_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference timed in another window (the cache of an earlier evaluation) made speedups of 30-1,000x."""
    from hipforge.execution.baselines import BaselineCache

    def refused(*_: Any) -> None:
        raise AssertionError("a cpu evaluation used the baseline cache")

    monkeypatch.setattr(BaselineCache, "get", refused)
    monkeypatch.setattr(BaselineCache, "put", refused)
    first = around("relu", "return honest(self, x)", config=PLAIN)
    second = around("relu", "return honest(self, x)", config=PLAIN)
    for result in (first, second):
        assert result.verdict == Verdict.CORRECT, result.message
        assert result.integrity["paired_timing"]["rounds"] == PLAIN.timed_trials
    assert first.ref_eager != second.ref_eager  # each timed afresh beside its own candidate


def test_frozen_stops_a_job_and_what_it_forked_and_lets_them_go() -> None:
    spin = "import os\nos.fork()\nwhile True:\n    pass\n"
    proc = subprocess.Popen([sys.executable, "-c", spin])

    class Job:
        def job_pids(self) -> list[int]:
            return [proc.pid, *child_pids(proc.pid)]

        def threads(self) -> dict[int, tuple[str, str]]:
            return {pid: (_stat(pid)[0], "spin") for pid in self.job_pids()}

    job = Job()
    try:
        deadline = time.monotonic() + 10
        while len(job.job_pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        with frozen(job):
            pids = job.job_pids()
            assert len(pids) == 2 and all(_stat(p)[0] in STOPPED for p in pids)
            cpu = [_stat(p)[1] for p in pids]
            time.sleep(0.2)
            assert [_stat(p)[1] for p in pids] == cpu  # no CPU time while stopped
        time.sleep(0.2)
        assert all(_stat(p)[0] not in STOPPED for p in pids)
        assert all(_stat(p)[1] > c for p, c in zip(pids, cpu, strict=True))
    finally:
        for pid in job.job_pids()[::-1]:
            subprocess.run(["kill", "-9", str(pid)], check=False)
        proc.wait()


def _stat(pid: int) -> tuple[str, int]:
    """(scheduler state, user + system ticks) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[11]) + int(fields[12])


def test_the_speedup_is_the_ratio_of_each_sides_fastest_trial() -> None:
    """One preempted trial on either side moves neither minimum; the fastest of the paired ratios would have
    followed the preempted candidate trial (0.5 / 8.0), the largest the preempted reference trial."""
    eager = [1.0, 1.1, 9.0, 1.05]
    candidate = [0.5, 8.0, 0.52, 0.51]
    result = EvalResult(Verdict.CORRECT, runtime=Timing.from_samples(candidate), ref_eager=Timing.from_samples(eager))
    result.finish_speedups("cpu")
    assert result.speedup_eager == pytest.approx(2.0)
    assert paired_record(eager, candidate) == {"rounds": 4, "median_round_ratio": pytest.approx(1.5, abs=0.6)}


def test_the_protocol_key_names_the_cpu_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored cpu evaluations timed against another window's reference are not reused as paired ones; GPU keys
    do not carry the cpu's name."""
    cpu, cuda = EvalConfig(), EvalConfig(backend="cuda")
    keys = protocol.protocol_key(cpu), protocol.protocol_key(cuda)
    monkeypatch.setattr(protocol, "TIMING_PROTOCOL", {})
    assert protocol.protocol_key(cpu) != keys[0]
    assert protocol.protocol_key(cuda) == keys[1]


def test_the_candidates_cpu_claim_stands_until_the_parents_reading_contradicts_it() -> None:
    """The candidate's claim for its forwards alone is taken while the batch's cheapest reading of a whole
    trial, less the batch's cheapest no-op trial, does not exceed it; a claim below that bound is replaced by
    it. A trial whose protocol ran dear does not replace its own honest claim."""
    cpu = CandidateCpu(freeze=lambda: None)  # type: ignore[arg-type,return-value]
    cpu.noop = [(1, 1.90), (1, 1.00), (1, 1.04), (1, 1.02), (1, 1.10), (1, 1.03)]  # the first pays lazy set-up
    assert cpu.protocol() == pytest.approx(1.0) and cpu.spread() == pytest.approx(0.035)
    # honest: the first trial's reading alone (1.45 - 1.0 = 0.45) is above its claim, the batch's is not
    cpu.timed = [(1, 1.45, 0.30), (1, 1.24, 0.25), (1, 1.20, 0.26)]
    assert cpu.forwards() == pytest.approx([0.30, 0.25, 0.26])
    # lies (0.02, 0.03, zero) beside readings whose cheapest is 0.25 beyond the protocol
    cpu.timed = [(1, 1.45, 0.02), (1, 1.25, 0.03), (1, 1.30, 0.0)]
    assert cpu.forwards() == pytest.approx([0.25, 0.25, 0.25])
    cpu.timed = [(1, 0.99, 0.0)]  # a reading under the protocol's cheapest: the floor
    assert cpu.forwards() == pytest.approx([0.001])
    cpu.noop, cpu.timed = [(4, 4.0), (4, 4.4)], [(4, 6.0, 1.0)]
    assert cpu.forwards() == pytest.approx([0.5])  # per forward of a trial of R = 4: the reading's 2.0 / 4


def test_the_references_cpu_time_is_a_warm_call_on_one_thread() -> None:
    """As the candidate's launches run on one worker in its timed trials (tests/test_cpu_workers.py): more
    threads never lower a CPU time, and waking a pool's threads costs what the load on the cores decides. The
    timed call follows an untimed one, so that no round's trial is colder than another's."""
    import torch

    from hipforge.execution.measure import cpu_time_warm

    before, seen = torch.get_num_threads(), []

    def forward() -> None:
        seen.append(torch.get_num_threads())
        if len(seen) == 2:  # the timed call
            sum(range(200_000))

    torch.set_num_threads(2)
    try:
        assert cpu_time_warm(forward) > 1.0  # the second call's work, not the first's nothing
        assert seen == [1, 1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_cpu_calibration_forward_returns_fresh_written_outputs_as_a_forward_does() -> None:
    """On the host, freeing a forward's outputs is part of the protocol: the no-op must make them afresh (and
    write them) for its CPU time to hold that cost; GPU backends keep handing back the same tensors."""
    import torch

    from hipforge.execution.forward_outputs import noop_module

    template = [torch.ones(3, 5), torch.ones(2, dtype=torch.float64)]
    fresh = noop_module(template, fresh=True)
    first, second = fresh(), fresh()
    assert all(a is not b and a.data_ptr() != b.data_ptr() for a, b in zip(first, second, strict=True))
    assert [(o.shape, o.dtype) for o in first] == [(t.shape, t.dtype) for t in template]
    assert all(not o.any() for o in first)
    kept = noop_module(template, fresh=False)
    assert all(a is t for a, t in zip(kept(), template, strict=True))
