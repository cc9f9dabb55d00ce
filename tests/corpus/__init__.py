"""The evaluator's test corpus: honest, buggy and deceptive candidates with their tasks (manifest.toml)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent
KERNEL_SLOT = re.compile(r"\{\{(\w+\.hip)\}\}")


@dataclass(frozen=True)
class Entry:
    kind: str  # honest | buggy | deceptive
    name: str
    task: str
    label: str | None = None  # deceptive: the hack check that must catch it
    stage: str | None = None  # deceptive: static, dynamic or static+run
    verdict: str | None = None  # buggy: the verdict it must get
    failing_seeds: tuple[int, ...] = ()

    @property
    def candidate_source(self) -> str:
        text = (ROOT / self.kind / f"{self.name}.py").read_text()
        return KERNEL_SLOT.sub(lambda m: (ROOT / "kernels" / m.group(1)).read_text(), text)

    @property
    def task_source(self) -> str:
        return (ROOT / "tasks" / f"{self.task}.py").read_text()


def entries(kind: str | None = None) -> list[Entry]:
    manifest = tomllib.loads((ROOT / "manifest.toml").read_text())
    found = [Entry("honest", name, task) for name, task in manifest["honest"].items()]
    for section in ("buggy", "deceptive"):
        for name, spec in manifest[section].items():
            spec = dict(spec)
            spec["failing_seeds"] = tuple(spec.get("failing_seeds", ()))
            found.append(Entry(section, name, **spec))
    return [e for e in found if kind is None or e.kind == kind]
