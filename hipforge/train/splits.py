"""Train / validation / held-out splits of a corpus, by task, with whole operator combinations held out.

Every task has a held-out key (``holdout_key``): a composition's sorted operator set, a mutation's seed
task, a constraint task's spec family (pattern, structure and operator set). A key's hash decides whether
every task sharing it is held out, so no held-out combination reaches training through a sibling task.
Of the rest, a task id's hash puts a share into validation. KernelBench problems (loaded by the caller
through hipforge's own loader) are a guard: a task equal to or near-duplicate of one (the similarity
fingerprint) never enters train or validation; ``check_splits`` asserts all of it and raises otherwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hipforge.tasks.synth.candidate import Synthetic, stored_id
from hipforge.tasks.synth.similarity import DEFAULT_THRESHOLD, FingerprintIndex, Match, fingerprint

SPLITS = ("train", "validation", "heldout")


@dataclass(frozen=True)
class SplitPolicy:
    heldout_share: float = 0.1  # of held-out keys (operator combinations, seeds, spec families)
    validation_share: float = 0.05  # of the remaining tasks
    salt: str = "hipforge-corpus-v1"  # another salt, another draw of held-out combinations

    def __post_init__(self) -> None:
        if not (0 <= self.heldout_share < 1 and 0 <= self.validation_share < 1):
            raise ValueError("heldout_share and validation_share must be in [0, 1)")


def holdout_key(task: Synthetic) -> str:
    """The combination a task is held out with: tasks sharing it are all held out or all not."""
    if task.mode == "composition":
        return "composition/" + "+".join(sorted(set(task.operators)))
    if task.mode == "mutation":
        if not task.parents:
            raise ValueError(f"mutation {task.name} names no seed task: its held-out key is unknown")
        return "mutation/" + "+".join(sorted(task.parents))
    if task.mode == "constraint":
        if task.spec is None:
            raise ValueError(f"constraint task {task.name} carries no spec")
        family = task.spec.splitlines()[0]  # "Spec (<pattern>, <layout> input)."
        structure = "residual" if "Structure: residual" in task.spec else "chain"
        return f"constraint/{family}/{structure}/" + "+".join(sorted(set(task.operators)))
    raise ValueError(f"unknown mode {task.mode!r}")


def _share(text: str, salt: str) -> float:
    """A stable number in [0, 1) for a string."""
    return int(hashlib.sha256(f"{salt}\x00{text}".encode()).hexdigest()[:12], 16) / 16**12


def assign(task_id: str, key: str, policy: SplitPolicy) -> str:
    if _share(key, policy.salt) < policy.heldout_share:
        return "heldout"
    return "validation" if _share(task_id, policy.salt + "/validation") < policy.validation_share else "train"


class KernelBenchGuard:
    """KernelBench problems by task id and fingerprint: what no training task may equal or closely resemble."""

    def __init__(self, problems: Iterable[tuple[str, str]], threshold: float = DEFAULT_THRESHOLD) -> None:
        """``problems``: (name, source) pairs, e.g. from hipforge.bench.kernelbench.load_kernelbench."""
        items = list(problems)
        self.threshold = threshold
        self.ids = {stored_id(source): name for name, source in items}
        self.index = FingerprintIndex((name, stored_id(source), fingerprint(source)) for name, source in items)
        self._matches: dict[str, Match | None] = {}  # by task id: splitting and checking ask about each task twice
        if not self.ids:
            raise ValueError("no KernelBench problems to guard against: pass the problems training must exclude")

    def __len__(self) -> int:
        return len(self.ids)

    def match(self, source: str) -> Match | None:
        """The KernelBench problem a source equals or near-duplicates, else None."""
        tid = stored_id(source)
        if tid in self.ids:
            return Match(self.ids[tid], tid, 1.0)
        if tid not in self._matches:
            self._matches[tid] = self.index.best_above(fingerprint(source), self.threshold)
        return self._matches[tid]


@dataclass
class Split:
    assigned: dict[str, str] = field(default_factory=dict)  # task id -> split
    keys: dict[str, str] = field(default_factory=dict)  # task id -> held-out key
    excluded: dict[str, str] = field(default_factory=dict)  # task id -> the KernelBench problem it resembles

    def tasks(self, split: str) -> list[str]:
        return sorted(t for t, s in self.assigned.items() if s == split)

    def sizes(self) -> dict[str, int]:
        return {s: len(self.tasks(s)) for s in SPLITS}


def split_tasks(tasks: Sequence[Synthetic], guard: KernelBenchGuard, policy: SplitPolicy = SplitPolicy()) -> Split:
    """Each task (by its stored id) into a split; tasks that resemble KernelBench go nowhere (``excluded``)."""
    out = Split()
    for task in tasks:
        tid = stored_id(task.source)
        if (hit := guard.match(task.source)) is not None:
            out.excluded[tid] = hit.name
            continue
        out.keys[tid] = holdout_key(task)
        out.assigned[tid] = assign(tid, out.keys[tid], policy)
    check_splits(out, {stored_id(t.source): t.source for t in tasks}, guard)
    return out


def check_splits(split: Split, sources: dict[str, str], guard: KernelBenchGuard) -> None:
    """Raise unless held-out keys never meet training, and no KernelBench problem (or a near-duplicate) trains."""
    held = {split.keys[t] for t in split.tasks("heldout")}
    training = split.tasks("train") + split.tasks("validation")
    leaked = sorted({split.keys[t] for t in training} & held)
    if leaked:
        raise ValueError(f"held-out combinations in training: {leaked[:5]}")
    for tid in training:
        if tid in split.excluded:
            raise ValueError(f"task {tid} resembles KernelBench problem {split.excluded[tid]} but is in training")
        if (hit := guard.match(sources[tid])) is not None:
            raise ValueError(f"task {tid} in training is {hit.score:.3f} similar to KernelBench problem {hit.name}")
