"""The trials of one evaluation, planned by the parent. Every trial runs the same protocol in the candidate's
process (prepare, go, commit, then ship or drop), so the candidate cannot tell a checked trial from a timed
one before it has committed its outputs; fresh seeds and checksum keys come from the parent's own RNG."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

SECOND_SIZE_SEEDS = 2


@dataclass(frozen=True)
class Trial:
    id: int
    purpose: str  # warmup | seed | adversarial | second_size | poison | timed
    seed: int
    size: int = 0  # 0: the task; 1: its second size
    variant: str | None = None  # an adversarial input transform (hipforge.execution.adversarial)
    full: bool = False  # outputs shipped whole and compared elementwise (else checksums only)
    key: int = 0

    def message(self) -> dict[str, object]:
        return {"op": "prepare", "id": self.id, "size": self.size, "variant": self.variant,
                "inspect": self.purpose == "seed", "poison": self.purpose == "poison"}


def fresh() -> int:
    return secrets.randbits(31)


def plan(seeds: tuple[int, ...], warmup: int, timed: int, variants: list[tuple[str, int]], second_size: bool,
         timed_full: int) -> list[Trial]:
    """Warm-ups, the correctness seeds, one trial per usable adversarial variant, the second size, the
    NaN-poison probe, then the timed trials (``timed_full`` of them, drawn at random, shipped whole)."""
    # warm-ups are shipped whole: a later output equal to a right one of theirs is a cached result
    specs: list[tuple[str, int, int, str | None, bool]] = [("warmup", fresh(), 0, None, True) for _ in range(warmup)]
    specs += [("seed", s, 0, None, True) for s in seeds]
    specs += [("adversarial", seed, 0, kind, True) for kind, seed in variants]
    specs += [("second_size", fresh(), 1, None, True) for _ in range(SECOND_SIZE_SEEDS if second_size else 0)]
    specs.append(("poison", seeds[0], 0, None, True))
    checked = set(secrets.SystemRandom().sample(range(timed), min(timed_full, timed)))
    specs += [("timed", fresh(), 0, None, i in checked) for i in range(timed)]
    return [Trial(i, purpose, seed, size, variant, full, secrets.randbits(62))
            for i, (purpose, seed, size, variant, full) in enumerate(specs)]
