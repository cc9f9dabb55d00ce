"""A synthetic task candidate with its provenance, and the seed tasks mutation starts from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from hipforge.tasks.errors import TaskError
from hipforge.tasks.source import task_id

Mode = Literal["composition", "mutation", "constraint"]
MODES: tuple[Mode, ...] = ("composition", "mutation", "constraint")


def stored_id(source: str) -> str:
    """The normalized-source id; a source that does not even parse (an LLM's prose) by its raw text."""
    try:
        return task_id(source)
    except TaskError:
        return hashlib.sha256(source.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SeedTask:
    """A task a mutation may start from: a reference library or KernelBench task."""

    name: str
    source: str

    @property
    def task_id(self) -> str:
        return stored_id(self.source)


@dataclass(frozen=True)
class Synthetic:
    name: str
    mode: Mode
    source: str  # the module; the offline one until an LLM writes it instead
    prompt: str  # what an LLM is asked to write the module from
    parents: tuple[str, ...] = ()  # task ids of the seeds a mutation started from
    operators: tuple[str, ...] = ()  # template operators a composition or spec uses
    spec: str | None = None  # the constraint spec text
    via: str = "offline"  # "offline", or the model that wrote the module

    def edges(self, child_id: str) -> list[dict[str, str]]:
        """Lineage rows: mutated_from the seed, composed_of each operator, inspired_by the spec."""
        parents = [(p, "mutated_from") for p in self.parents]
        parents += [(f"operator/{op}", "composed_of") for op in dict.fromkeys(self.operators)]
        if self.spec is not None:
            parents.append((spec_id(self.spec), "inspired_by"))
        return [{"child_id": child_id, "parent_id": p, "relation": r} for p, r in parents]


def spec_id(spec: str) -> str:
    return "spec/" + hashlib.sha256(spec.encode()).hexdigest()[:16]
