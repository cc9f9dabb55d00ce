"""Load KernelBench problems from a directory, a JSON-lines file or a Hugging Face dataset id.

hipforge never ships KernelBench: the user points at a copy. Problem files are named
``<problem_id>_<Name>.py``; in a directory they sit under ``level<N>/`` folders.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")
_LEVEL_DIR = re.compile(r"level_?(\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class KernelBenchProblem:
    level: int
    problem_id: int
    name: str
    source: str

    @property
    def task_name(self) -> str:
        return f"kernelbench/L{self.level}/{self.problem_id}_{self.name}"


class KernelBenchSourceError(ValueError):
    pass


def _from_directory(root: Path) -> Iterable[KernelBenchProblem]:
    level_dirs = [d for d in sorted(root.rglob("*")) if d.is_dir() and _LEVEL_DIR.search(d.name)]
    if not level_dirs:
        raise KernelBenchSourceError(f"{root} has no level1/ level2/ ... folders of problem files")
    for level_dir in level_dirs:
        level = int(_LEVEL_DIR.search(level_dir.name).group(1))
        for path in sorted(level_dir.glob("*.py")):
            match = _PROBLEM_FILE.match(path.name)
            if match:
                yield KernelBenchProblem(level, int(match.group(1)), match.group(2), path.read_text())


def _from_jsonl(path: Path) -> Iterable[KernelBenchProblem]:
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            yield KernelBenchProblem(int(row["level"]), int(row["problem_id"]), row["name"], row["code"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            raise KernelBenchSourceError(f"{path}:{lineno}: not a KernelBench row ({err})") from err


def _from_dataset(dataset_id: str, levels: Iterable[int]) -> Iterable[KernelBenchProblem]:
    import datasets  # lazy: heavy, and only this source needs it

    for level in levels:
        for row in datasets.load_dataset(dataset_id, split=f"level_{level}"):
            yield KernelBenchProblem(int(row["level"]), int(row["problem_id"]), row["name"], row["code"])


def load_kernelbench(source: str, levels: Iterable[int] = (1, 2, 3), limit: int = 0) -> list[KernelBenchProblem]:
    """Problems of the given levels, sorted by (level, problem_id); limit > 0 keeps the first per level."""
    wanted = sorted(set(levels))
    path = Path(source).expanduser()
    if path.is_dir():
        problems = _from_directory(path)
    elif path.is_file():
        if path.suffix != ".jsonl":
            raise KernelBenchSourceError(f"{path} is neither a directory nor a .jsonl file")
        problems = _from_jsonl(path)
    elif re.fullmatch(r"[\w.-]+/[\w.-]+", source):
        problems = _from_dataset(source, wanted)
    else:
        raise KernelBenchSourceError(f"KernelBench source {source!r} is not a directory, a .jsonl file or a dataset id")
    chosen = sorted((p for p in problems if p.level in wanted), key=lambda p: (p.level, p.problem_id))
    if limit > 0:
        kept, per_level = [], Counter[int]()
        for problem in chosen:
            if per_level[problem.level] < limit:
                kept.append(problem)
                per_level[problem.level] += 1
        chosen = kept
    return chosen
