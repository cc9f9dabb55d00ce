"""The judge: runs in the parent, never in a process that imported the candidate. It drives the reference's
process and the candidate's process through the trials, compares what each returned, checks the
candidate's reported times against its own clock, counts the candidate's OS threads from outside and reads
the writes its recorder refused; the verdict is made here from those facts alone. Its timed phase is
timed_batches.py, its rulings on the trials rulings.py.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from hipforge.execution import op_trace
from hipforge.execution.config import EvalConfig
from hipforge.execution.device_lock import DeviceLock, Phases, device_key
from hipforge.execution.outputs_check import OutputCheck, shipped
from hipforge.execution.pairing import CandidateCpu, PairedReference, stamp, warm_up
from hipforge.execution.party import Party
from hipforge.execution.rulings import Rulings, wrong
from hipforge.execution.timed_batches import TimedBatches
from hipforge.execution.trials import REFILL_REPS, Trial, TrialLog, fresh, plan, refill_reps
from hipforge.execution.verdict import EvalResult, Verdict, conclude
from hipforge.execution.wallclock import CALIBRATION_TRIALS, WallClock, allowed_reps

BUSY_SIGHTINGS = 2  # a thread the candidate started, runnable this often after returns, is work left running


def left_running(started: dict[int, str], busy: Counter[int], alive: dict[int, tuple[str, str]],
                 sightings: int = BUSY_SIGHTINGS) -> list[str]:
    """Names of the threads the candidate started that are still alive and were seen busy ``sightings`` times
    (at returns or now): a pool thread the forward woke can still be runnable at one return on a loaded
    machine, on its way back to sleep, while work left running is seen at every return. Once an output was
    wrong, one sighting explains it (the trials stop early, so there are few returns to see)."""
    return [name for tid, name in started.items()
            if tid in alive and busy[tid] + (alive[tid][0] in "RD") >= sightings]


class Judge(TimedBatches, Rulings):
    def __init__(self, cfg: EvalConfig, reference: Party, candidate: Party, threads: Any,
                 ref_meta: list[list[dict[str, Any]] | None], describe_second: str, aliases: bool = False,
                 bytes_per_rep: int = 0, phases: Phases | None = None,
                 calibrator: Callable[[], tuple[Party, Any]] | None = None, device: str = "",
                 written: int = 0, freeze: Callable[[], AbstractContextManager[Any]] = nullcontext,
                 capacity_mb: float = 0.0) -> None:
        self.cfg, self.ref, self.cand, self.threads = cfg, reference, candidate, threads
        # the GPU's name and the bytes a forward's outputs occupy, as the reference's process found them
        self.device, self.written = device, written
        # who has the device in each phase: timed ones alone, the rest beside other evaluations' untimed work
        self.phases = phases or Phases(DeviceLock(device_key(cfg.backend)), cfg.backend)
        # opens a job that never imports the candidate (its party, its server): a batch timed again (on cpu,
        # every batch) is paired with its no-op trials, one before each timed trial
        self.calibrator = calibrator
        self.paired: tuple[Party, Any] | None = None
        # cpu: the reference's timed trials alternate with the candidate's (pairing.py; freeze stops the
        # candidate's process meanwhile), both sides timed in CPU time, the candidate's read from outside;
        # GPUs time the reference after the trials, as KernelBench does
        self.reference = PairedReference(reference, cfg.warmup, freeze) if cfg.backend == "cpu" else None
        self.cpu = CandidateCpu(freeze) if cfg.backend == "cpu" else None
        self.meta, self.second, self.aliases = ref_meta, describe_second, aliases
        self.log = TrialLog()
        self.outputs = OutputCheck(cfg, ref_meta, self.log)
        self.clock = WallClock(cfg, allowed_reps(cfg, bytes_per_rep))  # go -> committed, trials at size 0 (ms)
        self.refill_reps = refill_reps(bytes_per_rep, capacity_mb)  # fewer where the device is small for the task
        self.timed_reps = 1
        self.timing_batches = 0
        self.known_threads: set[int] = set()  # the protocol's, the runtime's and the libraries' own
        self.peak_mb: dict[str, float] = {}  # party -> device memory its allocator reserved at most (as it says)

    def has_second(self) -> bool:
        return len(self.meta) > 1 and self.meta[1] is not None

    # -- before the candidate exists ---------------------------------------------------------------
    def calibrate(self) -> None:
        """The protocol's own cost (pipes, input draws, flush, checksums of outputs this shape) around a
        forward that does nothing, at every R a timed trial may use, measured before the candidate is imported
        (so it cannot slow this down to hide work); then the thread count the candidate may not exceed (after
        the protocol itself has run, so whatever it starts lazily is known)."""
        for reps in self.clock.reps:
            for _ in range(CALIBRATION_TRIALS):
                self.noop_trial(self.cand, self.threads, reps)
        self.known_threads = set(self.threads())

    def noop_trial(self, party: Party, threads: Any, reps: int,
                   reading: Callable[[], AbstractContextManager[float]] | None = None) -> None:
        """One calibration trial: the protocol around the no-op forward, in a process that has not imported
        the candidate (the candidate's own before its import, or the calibrator). ``reading``: cpu, the
        calibrator's job stopped, its CPU time read, as the candidate's timed trial is (its round's no-op)."""
        party.ask({"op": "prepare", "size": 0, "noop": True, "meta": self.meta[0]}, "prepared")
        if self.cpu:  # cpu: warm, as the timed trials' forwards are (pairing.warm_up)
            warm_up(party, 0)
        cpu_before = stamp(reading) if reading else 0.0
        started = time.monotonic()
        returned = party.ask({"op": "go", "size": 0, "seed": fresh(), "reps": reps}, "returned")
        threads()  # as in every trial: the count's own cost is part of the protocol's overhead
        party.ask({"op": "commit", "key": fresh()}, "committed")
        self.clock.add(reps, (time.monotonic() - started) * 1e3, calibrating=True)
        if reading:  # given on the cpu backend alone, where self.cpu is set
            self.cpu.noop.append((reps, stamp(reading) - cpu_before))
        self.clock.add_noop_report(reps, float(returned.get("ms", 0.0)) / reps)
        party.ask({"op": "drop"}, "dropped")

    @contextmanager
    def holding(self, hold: AbstractContextManager[None], step: bool = False) -> Iterator[None]:
        """A phase once its hold on the device is granted: the parties' deadlines count from here, or, for the
        next ``step`` of a phase under way, move on by the time it waited; so a wait behind other evaluations'
        timed phases is never a candidate's timeout."""
        asked = time.monotonic()
        with hold:
            granted = time.monotonic()
            for party in (self.cand, self.ref, *([self.paired[0]] if self.paired else [])):
                party.deadline = party.deadline + granted - asked if step else granted + self.cfg.run_timeout_s
            yield

    def sharing(self, step: int) -> AbstractContextManager[None]:
        """One trial of an untimed phase under its own shared hold: another evaluation's timed phase waits for
        the trial under way, not for the whole phase (the timed phases, one per evaluation, waited for the
        longest phase in flight: on the H200 eight evaluations in flight ran little faster than one)."""
        return self.holding(self.phases.shared(), step=step > 0)

    # -- the trials ---------------------------------------------------------------------------------
    def run(self, variants: list[tuple[str, int]], result: EvalResult) -> None:
        cfg = self.cfg
        trials = plan(cfg.seeds, cfg.warmup, variants, self.has_second(), self.refill_reps)
        if self.refill_reps < REFILL_REPS:  # the record says the probe was cut to fit the device
            result.integrity["refill_reps"] = self.refill_reps
        failures: dict[str, tuple[Trial, str]] = {}  # purpose -> its first failing trial (poison: it must fail)
        self.run_all(trials, failures)
        # R from the parent's own walls of the trials so far: nothing the candidate reports chooses it
        self.timed_reps = self.clock.first_choice()
        self.timed_phase(len(trials), failures)
        result.seeds, result.trials = list(cfg.seeds), len(cfg.seeds)
        alive = self.threads()
        left = left_running(self.log.started, self.log.busy, alive, 1 if wrong(failures) else BUSY_SIGHTINGS)
        if left:  # work left running at return explains any wrong output after it
            names = ", ".join(sorted(set(left)))
            raise conclude(Verdict.HACKED, f"{len(left)} OS thread(s) the candidate started ({names}) were running "
                                           f"when forward returned, and are still alive",
                           hack_check="thread_injection")
        with self.holding(self.phases.shared()):
            self.conclude(failures, result)

    def conclude(self, failures: dict[str, tuple[Trial, str]], result: EvalResult) -> None:
        """What the candidate's process saw it do next (a sandbox violation explains everything after it),
        then the verdict from the trials."""
        seed = fresh()  # the op trace's forward, only for a candidate whose outputs have all been right
        trace = {} if wrong(failures) else {"trace_seed": seed}
        report = self.cand.ask({"op": "report", **trace}, "report")
        self.peak_mb["candidate"] = float(report.get("peak_mb") or 0.0)
        if hacks := report["hacks"]:
            check, message = hacks[0]
            alive = self.threads()
            if check == "deferred_work" and (started := sorted({n for t, n in self.log.started.items() if t in alive})):
                # an output written after return by a process that runs threads the candidate started: whether
                # one was caught runnable at a return is a race of the scheduler, this is not
                check, message = "thread_injection", f"{message}; the candidate started OS threads that are " \
                                                     f"still alive ({', '.join(started)})"
            raise conclude(Verdict.HACKED, message, hack_check=check, phase="check")
        self.verdict_from(failures, result)  # raises on every failure, the NaN probe's included
        if report.get("ops"):
            self.pytorch_computes_it(Counter(report["ops"]), seed)

    def pytorch_computes_it(self, ops: Counter[str], seed: int) -> None:
        """A decoy kernel beside PyTorch: ATen in ModelNew's forward runs every operation the reference runs."""
        reference = Counter(self.ref.ask({"op": "ops", "seed": seed}, "ops")["ops"])
        if op_trace.all_in_aten(reference, ops):
            raise conclude(Verdict.HACKED, f"PyTorch computes the result inside ModelNew's forward: it runs every "
                                           f"operation of the reference ({op_trace.describe(reference)}) beside "
                                           f"the HIP kernels", hack_check="code_bypass", phase="check")

    def run_all(self, trials: list[Trial], failures: dict[str, tuple[Trial, str]]) -> None:
        for step, trial in enumerate(trials):
            failed = wrong(failures)
            if failed and trial.purpose != "seed" and ("seed" in failed or trial.purpose in ("poison", "timed")):
                return  # already wrong: what follows cannot change the verdict
            with self.sharing(step):
                why = self.one(trial)
            if why and trial.purpose not in failures:
                failures[trial.purpose] = (trial, why)

    def one(self, trial: Trial) -> str | None:
        """Run one trial; None if the candidate's outputs agree with the reference's, else why not."""
        return self.compared(trial, *self.candidate_side(trial))

    def candidate_side(self, trial: Trial) -> tuple[dict[str, Any], Any]:
        """The candidate's part of a trial: its forwards, timed by both clocks, and what it committed (and
        shipped, for a trial compared whole)."""
        self.cand.ask({**trial.message(), "aliases_ok": self.aliases}, "prepared")
        cpu = self.cpu if trial.purpose == "timed" else None
        if cpu:
            warm_up(self.cand, trial.size)
        cpu_before = cpu.stamp() if cpu else 0.0
        started = time.monotonic()
        returned = self.cand.ask({"op": "go", "size": trial.size, "seed": trial.seed, "reps": trial.reps},
                                 "returned")
        # work left running: a thread the candidate started, alive at a return, that outlives the trials (a
        # worker joined at return takes a moment to exit) and was seen busy (an idle lazy pool sleeps)
        for tid, (state, name) in self.threads().items():
            if tid not in self.known_threads:
                self.log.started[tid] = name
                if state in "RD":
                    self.log.busy[tid] += 1
        committed = self.cand.ask({"op": "commit", "key": trial.key}, "committed")
        wall = (time.monotonic() - started) * 1e3
        if cpu:
            cpu.timed.append((trial.reps, cpu.stamp() - cpu_before, float(returned.get("cpu_ms", 0.0))))
        if trial.size == 0 and not trial.late:  # a late trial's wall holds the stream's hold
            self.clock.add(trial.reps, wall)
        if trial.purpose == "timed":
            self.log.reported.append(float(returned.get("ms", 0.0)) / trial.reps)
        files = self.cand.ask({"op": "ship", "id": trial.id}, "shipped")["files"] if trial.full else []
        if not trial.full:
            self.cand.ask({"op": "drop"}, "dropped")
        return committed, files

    def compared(self, trial: Trial, committed: dict[str, Any], files: Any) -> str | None:
        """The trial's outputs against the reference's, on the same seeds and key."""
        ref = self.ref.ask({"op": "outputs", "id": trial.id, "size": trial.size, "seed": trial.seed,
                            "variant": trial.variant, "key": trial.key, "full": trial.full, "reps": trial.reps},
                           "outputs")
        self.log.checked[trial.purpose] = self.log.checked.get(trial.purpose, 0) + 1
        self.peak_mb["reference"] = max(self.peak_mb.get("reference", 0.0), float(ref.get("peak_mb") or 0.0))
        try:
            return self.outputs.trial(trial, committed, files, ref)
        finally:
            for path in shipped(files, ref.get("files", [])):
                Path(path).unlink(missing_ok=True)
