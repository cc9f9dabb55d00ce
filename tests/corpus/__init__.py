"""The evaluator's test corpus: honest, buggy and deceptive candidates with their tasks (manifest.toml), and
the red-team sections: unusual (honest, in honest/) and redteam (attacks, in deceptive/)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent
KERNEL_SLOT = re.compile(r"\{\{(\w+\.hip)\}\}")
FOLDERS = {"unusual": "honest", "redteam": "deceptive"}  # sections whose files live in another section's folder
SECTIONS = ("buggy", "deceptive", "unusual", "redteam")  # tables of {task, ...}; honest maps name -> task


@dataclass(frozen=True)
class Entry:
    kind: str  # the manifest section: honest | buggy | deceptive | unusual | redteam
    name: str
    task: str
    label: str | None = None  # deceptive: the hack check that must catch it
    stage: str | None = None  # deceptive: static, dynamic or static+run
    verdict: str | None = None  # buggy: the verdict it must get
    failing_seeds: tuple[int, ...] = ()
    attack_class: str | None = None  # manifest key "class": what the audit groups its counts by
    gpu_only: bool = False  # an attack by stream order: the cpu backend's streams run in order, it hides nothing there

    @property
    def candidate_source(self) -> str:
        text = (ROOT / FOLDERS.get(self.kind, self.kind) / f"{self.name}.py").read_text()
        return KERNEL_SLOT.sub(lambda m: (ROOT / "kernels" / m.group(1)).read_text(), text)

    @property
    def task_source(self) -> str:
        return (ROOT / "tasks" / f"{self.task}.py").read_text()


def entries(kind: str | None = None, redteam: bool = False) -> list[Entry]:
    """One section's entries, or all of honest, buggy and deceptive (and unusual, redteam with ``redteam``)."""
    manifest = tomllib.loads((ROOT / "manifest.toml").read_text())
    found = [Entry("honest", name, task) for name, task in manifest["honest"].items()]
    for section in SECTIONS:
        for name, spec in manifest.get(section, {}).items():
            spec = dict(spec)
            spec["failing_seeds"] = tuple(spec.get("failing_seeds", ()))
            spec["attack_class"] = spec.pop("class", None)
            found.append(Entry(section, name, **spec))
    if kind is not None:
        return [e for e in found if e.kind == kind]
    return [e for e in found if redteam or e.kind not in FOLDERS]
