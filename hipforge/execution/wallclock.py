"""The parent's own clock against the candidate's reported times.

A trial's wall (go -> committed) holds the protocol's cost (pipes, input draws, the L2 flush, checksums)
besides the forward; on a GPU that cost is tens to hundreds of microseconds and noisy, more than a small
kernel's whole forward. So a timed trial runs R forwards in one go, each on fresh inputs, and the parent
compares per forward: seen = (fastest wall at R - fastest calibration at R) / R, the calibration being the
same protocol around a no-op forward, at the same R, taken before the candidate was imported. R is the
parent's choice, from its own walls of the earlier trials at the task's size.

The reported time of a forward is its events' interval, and that interval holds the events' own cost: what
the no-op forward reported in calibration (trusted: the candidate was not yet imported). So a forward's
report is expected near noop + seen. A tiny kernel's seen is a few microseconds, too little to contradict a
tenfold lie on its own; the no-op's interval is not, since no forward is faster than doing nothing.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from hipforge.execution.config import EvalConfig

CALIBRATION_TRIALS = 10
REPS = (1, 4, 16, 64)  # the forwards per timed trial the parent may choose: each one is calibrated
# R x the forward's wall the parent wants per timed trial: a few ms drown a GPU's per-trial noise. The cpu
# backend keeps one forward per trial: its noise is per forward, so R does not resolve it (on a shared
# 2-core machine the fastest no-op trial at R = 64 ranged 24-40 ms between evaluations, 0.25 ms a forward)
TARGET_MS = {"cpu": 0.0, "gpu": 2.0}
# reported times must be at least this share of what the parent's clock saw; on the cpu backend honest
# kernels were measured at a third of it (a 17.8 ms long-K matvec against a 53.5 ms fastest wall on a shared
# 2-core machine, a 0.06 ms argmax against 7.4 ms), and cpu times only rank candidates. On a GPU an
# amortized honest kernel is expected near 1 (events see the forward's launches and its kernels); half stays
# until that is measured on one
TIMING_FLOOR = {"cpu": 0.25, "gpu": 0.5}
# plus this much per trial, shared by its R forwards: below it the two clocks cannot tell a kernel from its
# overhead (HIP on CPU fibers, on a shared 2-core machine, jitters by milliseconds and its times only rank
# candidates; an H200's fastest trials still differ by tens of microseconds of pipes and dispatch)
TIMING_SLACK_MS = {"cpu": 2.0, "gpu": 0.05}
# or this share of the protocol's own cost per trial (the fastest no-op trial), if more: the protocol's work
# (input draws, copies and checksums of the outputs) jitters with its size. On the H200, 8 evaluations in flight,
# an honest 0.9 ms relu at KernelBench size (1 GB in and out, one forward per trial: R sets of them would not
# fit the memory for R) was seen up to 1.4 ms above its report, beside a no-op trial of about 11 ms
PROTOCOL_JITTER = {"cpu": 0.0, "gpu": 0.1}
# and, on the cpu backend only, the calibration's own spread (median over fastest): fibers' jitter is that
# wide there, while on a GPU the fastest-to-fastest difference is tight and the spread (a few tens of
# microseconds of pipes) would hide a tenfold lie about a 0.1 ms kernel
SPREAD_COUNTS = {"cpu": True, "gpu": False}


def kind(cfg: EvalConfig) -> str:
    return "cpu" if cfg.backend == "cpu" else "gpu"


def allowed_reps(cfg: EvalConfig, bytes_per_rep: int) -> tuple[int, ...]:
    """The R values this task may use: one forward where no amortization is wanted, else every R whose
    inputs and outputs (R sets of each, the most a trial could hold) fit in the memory cap."""
    target = cfg.reps_target_ms if cfg.reps_target_ms is not None else TARGET_MS[kind(cfg)]
    if target <= 0:
        return (1,)
    cap = cfg.reps_memory_mb << 20
    return tuple(r for r in REPS if r == 1 or r * bytes_per_rep <= cap)


@dataclass
class WallClock:
    cfg: EvalConfig
    reps: tuple[int, ...]  # allowed_reps(): the R values calibrated, and so the only ones used
    calibration: dict[int, list[float]] = field(default_factory=dict)  # R -> walls of no-op trials (ms)
    walls: dict[int, list[float]] = field(default_factory=dict)  # R -> walls of trials at the task's size
    noop_reported: dict[int, list[float]] = field(default_factory=dict)  # R -> the no-op's reports, per forward

    @property
    def target_ms(self) -> float:
        return self.cfg.reps_target_ms if self.cfg.reps_target_ms is not None else TARGET_MS[kind(self.cfg)]

    def add(self, reps: int, wall_ms: float, calibrating: bool = False) -> None:
        (self.calibration if calibrating else self.walls).setdefault(reps, []).append(wall_ms)

    def add_noop_report(self, reps: int, reported_ms: float) -> None:
        self.noop_reported.setdefault(reps, []).append(reported_ms)

    def restart(self, reps: int) -> None:
        """Forget R's walls and calibration: what follows at R is measured side by side (TimedBatches.pair)."""
        for samples in (self.calibration, self.walls, self.noop_reported):
            samples.pop(reps, None)

    def noop_ms(self, reps: int) -> float:
        """What a forward that does nothing reported per forward at R (its fastest: load only adds)."""
        return min(self.noop_reported.get(reps) or [0.0])

    def per_forward(self, reps: int) -> float:
        """The forward's own wall as the parent saw it: fastest trial over fastest no-op, per forward (a
        busy machine only ever adds delay, so the fastest of each is the closest to the truth)."""
        return (min(self.walls[reps]) - min(self.calibration[reps])) / reps

    def choose(self, per_forward_ms: float) -> int:
        """The fewest calibrated forwards whose walls add up to the target (the most allowed if none do)."""
        for r in self.reps:
            if r * per_forward_ms >= self.target_ms:
                return r
        return self.reps[-1]

    def first_choice(self) -> int:
        """R for the timed trials, from the single-forward trials so far at the task's size."""
        return self.choose(self.per_forward(1)) if self.walls.get(1) else self.reps[-1]

    def rerun(self, reps: int, reported_ms: float) -> int | None:
        """A larger R, if the timed trials call for one: their own walls (a forward slow in the earlier trials
        and fast in the timed ones, to keep R small where the clock resolves less), or the time the candidate
        reports (a claim of a forward too short for R to resolve is timed at the R that resolves it: a lie
        about the time, in native code the parent cannot see, buys the precision that contradicts it)."""
        wanted = max(self.choose(self.per_forward(reps)), self.choose(reported_ms))
        return wanted if wanted > reps else None

    def contradiction(self, reported_ms: float, reps: int) -> str | None:
        """Why ``reported_ms`` (per forward, the timed trials' median) cannot be true, if it cannot."""
        k = kind(self.cfg)
        seen, noop = self.per_forward(reps), self.noop_ms(reps)
        protocol = min(self.calibration[reps])
        spread = statistics.median(self.calibration[reps]) - protocol
        slack = (max(TIMING_SLACK_MS[k], PROTOCOL_JITTER[k] * protocol) + (spread if SPREAD_COUNTS[k] else 0.0)) / reps
        # seen can come out below zero (on a loaded H200, calibration walls above every trial's): it adds nothing
        if reported_ms >= TIMING_FLOOR[k] * (max(seen, 0.0) + noop) - slack:
            return None
        per = f" ({reps} forwards per trial)" if reps > 1 else ""
        floor = f", and a forward that does nothing reports {noop:.4g} ms" if noop > 0 else ""
        return (f"reports {reported_ms:.4g} ms per forward, but the evaluator's own clock saw {seen:.4g} ms per "
                f"forward beyond the protocol's overhead{per}{floor}")

    def summary(self, reps: int) -> dict[str, float]:
        """The two clocks at R, for the verdict's integrity record."""
        if not self.walls.get(reps) or not self.calibration.get(reps):
            return {}
        walls, calibration = self.walls[reps], self.calibration[reps]
        return {"seen_ms": round(self.per_forward(reps), 6), "noop_ms": round(self.noop_ms(reps), 6),
                "walls_ms": [round(min(walls), 3), round(statistics.median(walls), 3)],  # fastest, median
                "calibration_ms": [round(min(calibration), 3), round(statistics.median(calibration), 3)]}
