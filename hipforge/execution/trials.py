"""The trials of one evaluation, planned by the parent. Every trial runs the same protocol in the candidate's
process (prepare, go, commit, then ship or drop); fresh seeds and checksum keys come from the parent's own RNG.
A timed trial runs ``reps`` forwards (each on its own fresh inputs), told with go. The candidate knows a timed
trial as one (their place in the order tells it anyway), but not which of a batch are compared, nor whole: every
one commits its checksums first, so a candidate wrong in enough of them to move their median is caught. What
only guards the checked trials (the NaN fill of free memory, the second look at the outputs after commit) is
left out of the timed ones: the sample judges them, and a timed phase holds the device alone."""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

SECOND_SIZE_SEEDS = 2
# a fresh draw, then the same tensors holding the next seeds' values, three times: work left running after
# return that this trigger starts must outrun the copy taken at return every time
REFILL_REPS = 4
# the first forward makes the tensors, the second refills them: the least that probes. A task whose kept outputs
# at four would take over an eighth of the device's memory gets fewer (KernelBench L1 relu, 12 GB of inputs and
# outputs per forward: the candidate's process reached 55 GB on an 80 GB H100, alone, and the honest kernel ran
# out of memory)
REFILL_MIN_REPS, REFILL_DEVICE_SHARE = 2, 1 / 8
# trials whose inputs are written late, on the current stream, after forward has been called (GPUs): only what
# forward orders after that stream sees them. Warm-ups and timed trials keep KernelBench's timing (inputs
# ready, device idle: a busy stream would hide the launches' latency from the events)
LATE = frozenset({"seed", "refill", "adversarial", "second_size", "poison"})
TIMED_COMPARED = 16  # timed trials per batch whose outputs are compared with the reference's
ORDERED_IDS = 1 << 20  # a diagnosis trial's id: its late trial's, offset past any planned one


@dataclass(frozen=True)
class Trial:
    id: int
    purpose: str  # warmup | seed | refill | adversarial | second_size | poison | timed
    seed: int
    size: int = 0  # 0: the task; 1: its second size
    variant: str | None = None  # an adversarial input transform (hipforge.execution.adversarial)
    full: bool = False  # outputs shipped whole and compared elementwise (else checksums only)
    key: int = 0
    reps: int = 1  # forwards in this one go, each on inputs from job_common.rep_seeds(seed, reps)
    ordered: bool = False  # run again with its inputs ready before forward (the diagnosis of a late failure)
    compared: bool = True  # its outputs compared with the reference's (a timed trial: if it is in the sample)

    @property
    def late(self) -> bool:
        return self.purpose in LATE and not self.ordered

    def message(self) -> dict[str, object]:
        return {"op": "prepare", "id": self.id, "size": self.size, "variant": self.variant,
                "inspect": self.purpose == "seed", "poison": self.purpose == "poison",
                "refill": self.purpose == "refill", "late": self.late, "timed": self.purpose == "timed"}

    def in_order(self) -> Trial:
        """The same trial with its inputs ready before forward is called (the diagnosis of a late failure)."""
        return replace(self, id=self.id + ORDERED_IDS, ordered=True, key=secrets.randbits(62))


@dataclass
class TrialLog:
    """What the parent learnt from the trials so far."""

    reported: list[float] = field(default_factory=list)  # what the candidate said a forward took, per timed trial
    reports: list[dict[str, Any]] = field(default_factory=list)  # full comparisons of the correctness seeds
    checked: dict[str, int] = field(default_factory=dict)  # purpose -> trials checked
    right: set[str] = field(default_factory=set)  # digests of outputs that matched the reference
    started: dict[int, str] = field(default_factory=dict)  # tid -> name: threads alive at a return, not known
    busy: Counter[int] = field(default_factory=Counter)  # of those, how often runnable (or in the kernel) at a return


def fresh() -> int:
    return secrets.randbits(31)


def refill_reps(bytes_per_rep: int, capacity_mb: float) -> int:
    """The refill probe's forwards: REFILL_REPS, fewer (never under REFILL_MIN_REPS) where one forward's
    inputs and outputs times that many would take more than REFILL_DEVICE_SHARE of the device."""
    if bytes_per_rep <= 0 or capacity_mb <= 0:
        return REFILL_REPS
    fit = int(capacity_mb * 2**20 * REFILL_DEVICE_SHARE // bytes_per_rep)
    return max(REFILL_MIN_REPS, min(REFILL_REPS, fit))


def plan(seeds: tuple[int, ...], warmup: int, variants: list[tuple[str, int]], second_size: bool,
         refill: int = REFILL_REPS) -> list[Trial]:
    """The trials before the timed ones: warm-ups, the correctness seeds, the refill probe (the same input
    tensors again with new values: a result tied to the tensor is stale there), one trial per usable
    adversarial variant, the second size, the NaN-poison probe (the timed trials follow, once their R is
    chosen)."""
    # warm-ups are shipped whole: a later output equal to a right one of theirs is a cached result
    specs: list[tuple[str, int, int, str | None, int]] = [("warmup", fresh(), 0, None, 1) for _ in range(warmup)]
    specs += [("seed", s, 0, None, 1) for s in seeds]
    specs.append(("refill", fresh(), 0, None, refill))
    specs += [("adversarial", seed, 0, kind, 1) for kind, seed in variants]
    specs += [("second_size", fresh(), 1, None, 1) for _ in range(SECOND_SIZE_SEEDS if second_size else 0)]
    specs.append(("poison", seeds[0], 0, None, 1))
    return [Trial(i, purpose, seed, size, variant, True, secrets.randbits(62), reps)
            for i, (purpose, seed, size, variant, reps) in enumerate(specs)]


def compared_sample(backend: str, timed: int) -> int:
    """Timed trials per batch compared with the reference: where the fastest trial is the time that counts
    (the cpu backend, verdict.Timing.typical_ms), one trial moves it, so every one; else TIMED_COMPARED."""
    return timed if backend == "cpu" else min(TIMED_COMPARED, timed)


def timed_batch(first_id: int, timed: int, timed_full: int, reps: int, sample: int = TIMED_COMPARED) -> list[Trial]:
    """``timed`` timed trials of ``reps`` forwards each. Every one commits its checksums; a ``sample`` drawn at
    random is compared with the reference, ``timed_full`` of those whole. A candidate wrong in enough timed
    trials to move their median is in a sample of 16 all but 2^-16 of the time; where the fastest trial counts
    (the cpu backend), one trial moves it, and the sample is every trial."""
    rng = secrets.SystemRandom()
    compared = rng.sample(range(timed), min(sample, timed))
    full = set(rng.sample(compared, min(timed_full, len(compared))))
    return [Trial(first_id + i, "timed", fresh(), full=i in full, key=secrets.randbits(62), reps=reps,
                  compared=i in compared) for i in range(timed)]
