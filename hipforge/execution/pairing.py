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
(a thread, a child) can burn the cores during the reference's trial to slow it down and buy a speedup.

Each side's time of a trial is CPU time, not wall time: what its threads ran, exited ones included, which a
preemption or a foreign load on the cores cannot inflate (a wall taken under another job's load halved a fiber
kernel's speedup, since the fiber runtime spreads its blocks over every core while a small eager op runs on
one). The reference's is read in its own process around the forward, right after an untimed call on the same
inputs (measure.cpu_time_warm: every round's trial as warm as the first); the candidate's from outside, by the
kernel's clock of its processes, with the job stopped before and after the trial (a running thread's last
slice is accounted only when it stops). That reading holds the protocol too (input draws, copies, checksums:
more CPU than a small kernel's forward), so the candidate's own claim for its forwards is taken, as precise as
the reference's, as long as the reading does not contradict it: a claim below the batch's cheapest reading less
the batch's cheapest no-op trial, by more than the no-op trials' spread, is replaced by that bound (and a batch
whose readings contradict every claim is timed again: TimedBatches.every_claim_contradicted). The no-op trials
are the calibrator's, one per round (since paired-cpu-time-v5), read from outside as the candidate's trials are,
so both minima come from the same window. The candidate's process cannot start another to hide work in (the
sandbox's no_processes).

Both sides' timed forwards are warm, each right after an untimed forward: the reference's on the trial's
inputs, in its own process; the candidate's on throwaway inputs (warm_up), before its reading's first stop, so
the reading, and the no-op trials it is weighed against (warmed the same way), hold no warm-up.

Both sides run their timed forwards on one thread: the reference on one intra-op thread (measure.cpu_time_warm),
the candidate's launches on one worker of the fiber runtime (cpu/workers.py). A CPU time is never lowered by
more threads, while starting, waking and joining them cost a small kernel's forward several times over, by an
amount that moves with the load on the cores: that, not the kernel, was most of a small kernel's time."""

from __future__ import annotations

import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from hipforge.execution.party import Party
from hipforge.execution.trials import fresh
from hipforge.execution.verdict import EvalResult, Timing

STOPPED = "TtZX"  # /proc states of a task that runs no more: stopped, traced, exiting
FREEZE_WAIT_S = 1.0
CPU_FLOOR_MS = 0.001  # the least CPU time a forward is taken to cost


class Jobs(Protocol):
    def job_pids(self) -> list[int]: ...

    def threads(self) -> dict[int, tuple[str, str]]: ...


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:  # gone since the listing
            pass


def cpu_clock(pid: int) -> int:
    """Linux's CPU-time clock of a whole process, MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED): every thread's
    run time, exited ones included, in ns; any process may read another's."""
    return (~pid << 3) | 2


def cpu_ms(pids: list[int]) -> float:
    """The processes' CPU time so far (ms); one gone since the listing counts nothing."""
    total = 0
    for pid in pids:
        try:
            total += time.clock_gettime_ns(cpu_clock(pid))
        except OSError:
            pass
    return total / 1e6


@contextmanager
def frozen(jobs: Jobs) -> Iterator[float]:
    """The job's processes stopped until the block ends: stopped again while new ones appear (a stopped process
    forks no more), and waited for until every thread is seen stopped (the signal lands asynchronously).
    Yields the job's CPU time at the stop, exact then: every thread's last slice was accounted as it stopped."""
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
        yield cpu_ms(sorted(seen))
    finally:
        _signal(sorted(seen), signal.SIGCONT)


def stamp(freeze: Callable[[], AbstractContextManager[float]]) -> float:
    """A job's CPU time (ms), read with it stopped."""
    with freeze() as cpu_ms_now:
        return cpu_ms_now


@dataclass
class CandidateCpu:
    """The candidate's CPU time per trial (go -> committed: its forwards, their input draws, the copies and
    checksums of their outputs), each end read with its job stopped; the same around each round's no-op forward
    in the calibrator (the protocol's own cost, in the same window); and what the candidate's process says its
    forwards alone cost in CPU time, read as the reference reads its own."""

    freeze: Callable[[], AbstractContextManager[float]]
    noop: list[tuple[int, float]] = field(default_factory=list)  # this batch's no-op trials: (R, CPU ms read)
    timed: list[tuple[int, float, float]] = field(default_factory=list)  # this batch's (R, CPU ms read, claimed)

    def stamp(self) -> float:
        return stamp(self.freeze)

    def restart(self) -> None:
        """A batch timed again is weighed against its own rounds' no-op trials alone."""
        self.noop.clear()
        self.timed.clear()

    def protocol(self) -> float:
        """The protocol's cost per forward: the batch's cheapest no-op trial. Taken in the calibrator, round by
        round beside the timed trials (same window, same load), so it moves with the readings it is
        subtracted from; the calibration before the import was minutes earlier, under other load, and its
        median sat 0.13 ms below one batch's readings, more than relu's whole forward."""
        return min(ms / reps for reps, ms in self.noop)

    def spread(self) -> float:
        """How far the batch's typical no-op trial sits above its cheapest, per forward: the protocol's jitter
        in this window, and so how finely the bound can tell one forward's cost from another's."""
        return statistics.median(ms / reps for reps, ms in self.noop) - self.protocol()

    def forwards(self) -> list[float]:
        """Per forward: the candidate's own claim (as precise as the reference's reading: the forward alone),
        unless the batch's readings contradict it, and then the bound (the batch's cheapest reading beyond the
        batch's cheapest no-op trial). Both are trials of the same protocol in the same rounds, and the no-op
        runs in the calibrator, which never imports the candidate, while the candidate's job is stopped: nothing
        the candidate does makes a no-op dearer. The bound is itself a difference of two noisy minima taken in
        two processes, so a claim contradicts it only when it lies below the bound by more than the window's
        no-op spread (least()). An honest small kernel's claim sat below the bound in every trial of a
        batch on loaded cores (relu: claims 0.03-0.06 ms, bound 0.085 ms, no-op spread 0.2 ms), and replacing
        it put the protocol's jitter in place of the kernel's time. So a lie about the time (a patched timer, a
        native clock hook) gains at most that gap between the minima plus the spread (both in the record); a
        forward well above the protocol's jitter is held to its cost within them. The bound is the batch's,
        not each trial's: a trial whose protocol ran dear would replace an honest claim by its own reading."""
        bound, least = self.bound(), self.least()
        return [bound if claimed / reps < least else max(claimed / reps, CPU_FLOOR_MS)
                for reps, _, claimed in self.timed]

    def bound(self) -> float:
        """The batch's cheapest reading beyond the protocol's cost, per forward (never below the floor)."""
        return max(min(read / reps for reps, read, _ in self.timed) - self.protocol(), CPU_FLOOR_MS)

    def least(self) -> float:
        """The least claim per forward the readings leave standing: the bound less the spread."""
        return self.bound() - self.spread()

    def bounded(self) -> int:
        """How many of the batch's claims the bound replaced, for the record: a speedup set by the bound
        follows the protocol's jitter rather than the candidate's own clock."""
        least = self.least()
        return sum(claimed / reps < least for reps, _, claimed in self.timed)


def warm_up(party: Party, size: int) -> None:
    """cpu: the forward of the trial about to be read (a timed one, or a no-op) called once untimed,
    before the reading's first stop, as the reference's timed call follows an untimed one. Each trial's forward
    was else the first since its process was stopped through the reference's trial (relu's cold forwards claimed
    0.045-0.12 ms of CPU within one batch, its warm ones 0.033-0.046 ms). On a fresh seed of the parent's:
    a cache keyed on inputs learns nothing the trial's forward (its inputs drawn from go's seed) can use."""
    party.ask({"op": "warm", "size": size, "seed": fresh()}, "warmed")


class PairedReference:
    """The reference's half of each round: one eager forward (and one torch.compile forward, if compiled) on
    fresh inputs, timed in the reference's own process while the candidate's is frozen."""

    def __init__(self, ref: Party, warmup: int, freeze: Callable[[], AbstractContextManager[float]]) -> None:
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
        trials already, torch.compile's only its warm-up); its times are CPU times its own process read."""
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
        ``candidate_ms``: the candidate's CPU times of the same rounds, in order."""
        result.ref_eager = Timing.from_samples(self.eager)
        result.ref_compiled = Timing.from_samples(self.compiled) if self.compiled else None
        result.integrity["paired_timing"] = paired_record(self.eager, candidate_ms)
        failed = f" (torch.compile reference failed: {self.compile_error})" if self.compile_error else ""
        result.message = ("correct on all trials (CPU time of each side, the reference timed beside the candidate, "
                          "round by round)" + failed)


def paired_record(eager: list[float], candidate: list[float]) -> dict[str, Any]:
    """For the record: the rounds, and the median of the per-round ratios (what the ratio of the minima is
    checked against when a speedup looks odd)."""
    ratios = [r / c for r, c in zip(eager, candidate, strict=False) if c > 0]
    return {"rounds": len(eager), "median_round_ratio": round(statistics.median(ratios), 4) if ratios else None}
