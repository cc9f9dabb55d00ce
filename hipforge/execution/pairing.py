"""The cpu backend's paired timing: the reference's and the candidate's timed trials alternate, one round
after another, inside the same hold of the cores, so both are measured in the same window under the same load.

On shared cores a trial the scheduler preempts costs a whole time slice (a 0.011 ms eager forward was timed
at 8 ms while other jobs ran), and a reference timed in another window than its candidate (a baseline cached
while builds ran, or the quiet minutes after) made speedups of 30-1,000x that said nothing about the kernel.
Here each side's time is its fastest trial of the batch: preemption only adds to a trial, so each minimum is
the trial closest to that side's cost, and the speedup is their ratio. Not the fastest of the paired ratios:
one preempted candidate trial would set it low, one preempted reference trial high; each side's minimum needs
only one undisturbed trial per side in the batch, and interleaving puts slow drift (frequency, a load that
comes and goes) into both sides alike.

The candidate's process is stopped (SIGSTOP, from outside) while the reference runs: nothing it started
(a thread, a child) can burn the cores during the reference's trial to slow it down and buy a speedup."""

from __future__ import annotations

import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from hipforge.execution.party import Party
from hipforge.execution.trials import fresh
from hipforge.execution.verdict import EvalResult, Timing

STOPPED = "TtZX"  # /proc states of a task that runs no more: stopped, traced, exiting
FREEZE_WAIT_S = 1.0


class Jobs(Protocol):
    def job_pids(self) -> list[int]: ...

    def threads(self) -> dict[int, tuple[str, str]]: ...


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:  # gone since the listing
            pass


@contextmanager
def frozen(jobs: Jobs) -> Iterator[None]:
    """The job's processes stopped until the block ends: stopped again while new ones appear (a stopped process
    forks no more), and waited for until every thread is seen stopped (the signal lands asynchronously)."""
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + FREEZE_WAIT_S
        while time.monotonic() < deadline:
            new = [p for p in jobs.job_pids() if p not in seen]
            _signal(new, signal.SIGSTOP)
            seen.update(new)
            if not new and all(state in STOPPED for state, _ in jobs.threads().values()):
                break
            time.sleep(0.0005)
        yield
    finally:
        _signal(sorted(seen), signal.SIGCONT)


class PairedReference:
    """The reference's half of each round: one eager forward (and one torch.compile forward, if compiled) on
    fresh inputs, timed in the reference's own process while the candidate's is frozen."""

    def __init__(self, ref: Party, warmup: int, freeze: Callable[[], AbstractContextManager[None]]) -> None:
        self.ref, self.warmup, self.freeze = ref, warmup, freeze
        self.eager: list[float] = []
        self.compiled: list[float] = []
        self.compile_error = ""
        self.warm = False

    def restart(self) -> None:
        """A batch timed again replaces the rounds before it, as the candidate's reported times are."""
        self.eager, self.compiled = [], []

    def trial(self) -> None:
        """The reference's trial of one round (the warm-ups first, once: its eager model ran the checked
        trials already, torch.compile's only its warm-up)."""
        with self.freeze():
            for _ in range(0 if self.warm else self.warmup):
                self.ref.ask({"op": "time_one", "seed": fresh()}, "timed_one")
            self.warm = True
            timed = self.ref.ask({"op": "time_one", "seed": fresh()}, "timed_one")
        self.eager.append(float(timed["eager"]))
        if "compiled" in timed:
            self.compiled.append(float(timed["compiled"]))
        self.compile_error = timed.get("compile_error", "")

    def conclude(self, result: EvalResult, candidate_ms: list[float]) -> None:
        """The reference's timings from the rounds (result.finish_speedups takes each side's fastest);
        ``candidate_ms``: the candidate's reported times of the same rounds, in order."""
        result.ref_eager = Timing.from_samples(self.eager)
        result.ref_compiled = Timing.from_samples(self.compiled) if self.compiled else None
        result.integrity["paired_timing"] = paired_record(self.eager, candidate_ms)
        failed = f" (torch.compile reference failed: {self.compile_error})" if self.compile_error else ""
        result.message = "correct on all trials (reference timed beside the candidate, round by round)" + failed


def paired_record(eager: list[float], candidate: list[float]) -> dict[str, Any]:
    """For the record: the rounds, and the median of the per-round ratios (what the ratio of the minima is
    checked against when a speedup looks odd)."""
    ratios = [r / c for r, c in zip(eager, candidate, strict=False) if c > 0]
    return {"rounds": len(eager), "median_round_ratio": round(statistics.median(ratios), 4) if ratios else None}
