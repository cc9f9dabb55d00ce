"""The judge's timed phase: batches of timed trials at the R the parent's walls chose, each holding the device
alone (on the cpu backend paired round by round with the reference's trials, pairing.py), timed again while the
parent's clock contradicts what the candidate reported, and the candidate's timing from them. A part of the judge
(hipforge.execution.judge.Judge), kept apart from the checked trials and the verdict."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from hipforge.execution.config import EvalConfig
from hipforge.execution.device_lock import Phases
from hipforge.execution.pairing import Jobs, frozen
from hipforge.execution.rulings import wrong
from hipforge.execution.trials import Trial, TrialLog, compared_sample, timed_batch
from hipforge.execution.verdict import Timing, Verdict, conclude
from hipforge.execution.wallclock import WallClock
from hipforge.execution.write_floor import below_floor

TIMED_BATCHES = 3  # batches at the final R at most, while the parent's clock (or, on cpu, every claim) is contradicted
RETRY_PAUSE_S = 0.5


class TimedBatches:
    """Mixed into Judge, which runs each trial (``candidate_side``, ``compared``) and holds the device."""

    cfg: EvalConfig
    log: TrialLog
    clock: WallClock
    phases: Phases
    calibrator: Callable[[], tuple[Any, Jobs]] | None
    paired: tuple[Any, Jobs] | None
    cand: Any  # the candidate's party
    reference: Any  # pairing.PairedReference on the cpu backend
    cpu: Any  # pairing.CandidateCpu on the cpu backend
    timed_reps: int
    timing_batches: int
    aliases: bool
    written: int
    device: str
    holding: Callable[..., AbstractContextManager[None]]
    sharing: Callable[[int], AbstractContextManager[None]]
    noop_trial: Callable[..., None]
    candidate_side: Callable[[Trial], tuple[dict[str, Any], Any]]
    compared: Callable[[Trial, dict[str, Any], Any], str | None]

    def timed_phase(self, done: int, failures: dict[str, tuple[Trial, str]]) -> None:
        """The batches of timed trials, after the ``done`` trials before them: at the R chosen, then at each R
        the parent's walls ask for, then again at the final R while the parent's clock contradicts them."""
        cfg = self.cfg
        batches = 0
        sample = compared_sample(cfg.backend, cfg.timed_trials)

        def timed(reps: int) -> None:
            nonlocal batches
            self.log.reported.clear()  # a batch's times replace the batch's before it; the walls add up
            if self.reference:  # the cpu backend, where self.cpu is set too
                self.reference.restart()
                self.cpu.restart()
            # cpu: no build beside the rounds, however many the cores (the cores first, as a retry takes them)
            with self.phases.retry() if self.reference else nullcontext():
                self.run_timed(timed_batch(done + batches * cfg.timed_trials, cfg.timed_trials,
                                           cfg.timed_full_checks, reps, sample), failures)
            self.timed_reps, batches = reps, batches + 1

        if self.reference:  # cpu: every batch's claims are bounded by no-op trials of its own rounds
            self.pair()
        timed(self.timed_reps)
        while not wrong(failures) and (more := self.clock.rerun(self.timed_reps, self.reported_ms())):
            timed(more)
        # a machine busy with other evaluations' builds and work can hold every trial of a batch back; a faked
        # clock is contradicted again in a later batch, timed once the builds in flight are done (and none start
        # meanwhile), while an honest kernel's fastest walls come down
        at_final_reps = 1
        while at_final_reps < TIMED_BATCHES and not wrong(failures) and (
                self.contradicted() or self.every_claim_contradicted()):
            time.sleep(RETRY_PAUSE_S)
            self.pair()
            with nullcontext() if self.reference else self.phases.retry():
                timed(self.timed_reps)
            at_final_reps += 1
        self.timing_batches = batches

    def pair(self) -> None:
        """From here on (on the cpu backend, from the first batch) the timed trials are weighed against no-op
        trials taken beside them, in the calibrator: the calibration before the import was taken at another
        moment, and a machine busy with other evaluations (their builds, their references' compiles) moves the
        protocol's cost by more than a small kernel's whole forward, either way. The calibrator never imports
        the candidate, so nothing the candidate does inside its own process reaches these no-op trials."""
        if self.paired is None and self.calibrator is not None:
            self.paired = self.calibrator()
            self.clock.restart(self.timed_reps)

    def run_timed(self, batch: list[Trial], failures: dict[str, tuple[Trial, str]]) -> None:
        """A batch of timed trials holding the device alone; then, beside other evaluations' untimed work, the
        reference's outputs for the sample of them that is compared (every one committed its checksums before
        it could know whether it is in the sample). None once an output was wrong: the verdict is made."""
        if wrong(failures):
            return
        committed = []
        self.one_worker(True)
        try:
            with self.holding(self.phases.timed()):
                for trial in batch:
                    if self.paired:
                        self.paired_noop(*self.paired, trial.reps)
                    if self.reference:
                        self.reference.trial()
                    committed.append((trial, *self.candidate_side(trial)))
        finally:  # a trial that fails leaves the candidate's checked trials (the second size's) on every worker
            self.one_worker(False)
        for step, (trial, sums, files) in enumerate(c for c in committed if c[0].compared):
            with self.sharing(step):
                why = self.compared(trial, sums, files)
            if why and trial.purpose not in failures:
                failures[trial.purpose] = (trial, why)

    def paired_noop(self, party: Any, jobs: Jobs, reps: int) -> None:
        """The round's no-op trial in the calibrator. cpu: read from outside as the candidate's trial is, with
        the candidate's job stopped meanwhile (as through the reference's trial), so nothing it runs can make
        the no-op dearer and lower the bound on its claims."""
        if not self.cpu:
            self.noop_trial(party, jobs.threads, reps)
            return
        with self.cpu.freeze():
            self.noop_trial(party, jobs.threads, reps, lambda: frozen(jobs))

    def one_worker(self, on: bool) -> None:
        """cpu: the candidate's launches run on one worker thread while its trials are timed (cpu/workers.py),
        as the reference's forwards run on one intra-op thread (measure.cpu_time_warm)."""
        if self.reference:
            self.cand.ask({"op": "timing", "on": on}, "timing")

    def reported_ms(self) -> float:
        return Timing.from_samples(self.log.reported).typical_ms(self.cfg.backend)

    def contradicted(self) -> str | None:
        return self.clock.contradiction(self.reported_ms(), self.timed_reps)

    def every_claim_contradicted(self) -> bool:
        """cpu: the batch's readings contradicted each of its claims. On two shared cores a whole batch of the
        candidate's readings sat 0.7 ms a trial above the no-op trials of the same rounds (a sibling thread's
        load lands in one job's CPU time and not the other's), one batch in ten, and that gap replaced an honest
        relu's every claim; the next batch did not repeat it. A lie is contradicted in every batch."""
        return bool(self.cpu) and self.cpu.bounded() == len(self.cpu.timed)

    def candidate_ms(self) -> list[float]:
        """The candidate's times per forward of the timed trials: on the cpu backend its CPU times read from
        outside (pairing.py), elsewhere what its events reported (checked against the parent's clock)."""
        return self.cpu.forwards() if self.cpu else list(self.log.reported)

    def timing(self) -> Timing:
        """The candidate's times per forward, unless the parent's own clock contradicts the times it reported,
        or they are shorter than writing the outputs takes (where they are the candidate's own: not views of
        inputs)."""
        if why := self.contradicted():
            batches = f" ({self.timing_batches} batches of timed trials)" if self.timing_batches > 1 else ""
            raise conclude(Verdict.HACKED, why + batches, hack_check="timing_mismatch", phase="time")
        if not self.aliases and (why := below_floor(self.reported_ms(), self.written, self.device)):
            raise conclude(Verdict.HACKED, why, hack_check="timing_mismatch", phase="time")
        return Timing.from_samples(self.candidate_ms())
