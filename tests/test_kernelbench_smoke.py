"""Every KernelBench problem (levels 1, 2 and 3) must pass the static checks and run at smoke scale on CPU.

The problems are read from ``<repo>/../shared/kernelbench`` (or HIPFORGE_KERNELBENCH_PATH, a directory
or the .jsonl itself); the project never copies them into the repository.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from hipforge.tasks import TaskError, check_source, check_tasks, smoke_ladder, task_id

PROBLEMS_FILE = "kernelbench_l1_l2a_l3.jsonl"


@pytest.fixture(scope="module")
def problems() -> list[dict[str, Any]]:
    override = os.environ.get("HIPFORGE_KERNELBENCH_PATH")
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "shared" / "kernelbench"
    if path.is_dir():
        path = path / PROBLEMS_FILE
    if not path.is_file():
        pytest.skip(f"KernelBench problems not found at {path} (set HIPFORGE_KERNELBENCH_PATH)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def problem_name(problem: dict[str, Any]) -> str:
    return f"L{problem['level']}/{problem['problem_id']}_{problem['name']}"


def test_every_problem_passes_static_checks(problems: list[dict[str, Any]]) -> None:
    ids = set()
    for problem in problems:
        check_source(problem["code"], problem_name(problem))
        assert smoke_ladder(problem["code"]), problem_name(problem)
        ids.add(task_id(problem["code"]))
    assert len(ids) == len(problems), "two KernelBench problems share a task_id"


def test_every_problem_runs_at_smoke_scale(problems: list[dict[str, Any]]) -> None:
    start = time.monotonic()
    results = dict(check_tasks(((problem_name(p), p["code"]) for p in problems), workers=2))
    elapsed = time.monotonic() - start
    failed = {name: r for name, r in results.items() if isinstance(r, TaskError)}
    ran = {name: r for name, r in results.items() if not isinstance(r, TaskError)}
    print(f"\nKernelBench smoke scale: {len(ran)}/{len(results)} problems ran cleanly in {elapsed:.0f} s")
    slowest = sorted(ran.items(), key=lambda item: -(item[1].init_seconds + item[1].seconds))[:5]
    for name, run in slowest:
        print(f"  slow: {name}: init {run.init_seconds:.2f} s, forward {run.seconds:.2f} s, {run.constants}")
    for name, error in sorted(failed.items()):
        print(f"  FAILED {name}: {error}")
    assert len(results) == len(problems)
    assert not failed, "\n".join(f"{name}: {error}" for name, error in sorted(failed.items()))
