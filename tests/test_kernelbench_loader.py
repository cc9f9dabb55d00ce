"""Loading KernelBench from a directory of problem files or a JSON-lines file; bad sources are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hipforge.bench.kernelbench import KernelBenchSourceError, load_kernelbench
from tests.conftest import kernelbench_jsonl

PROBLEM = "import torch\nclass Model(torch.nn.Module):\n    pass\n"


def test_directory_of_level_folders(tmp_path: Path) -> None:
    for level, files in {1: ["2_Relu.py", "10_Matmul.py", "notes.txt"], 2: ["1_Conv_ReLU.py"]}.items():
        folder = tmp_path / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        for name in files:
            (folder / name).write_text(PROBLEM)
    problems = load_kernelbench(str(tmp_path))
    found = [(p.level, p.problem_id, p.name) for p in problems]
    assert found == [(1, 2, "Relu"), (1, 10, "Matmul"), (2, 1, "Conv_ReLU")]
    assert problems[0].task_name == "kernelbench/L1/2_Relu"
    assert [p.problem_id for p in load_kernelbench(str(tmp_path), levels=[1], limit=1)] == [2]


def test_jsonl_rows_and_a_broken_row(tmp_path: Path) -> None:
    good = {"level": 3, "problem_id": 7, "name": "Net", "code": PROBLEM}
    path = tmp_path / "kb.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({"level": 1}) + "\n")
    with pytest.raises(KernelBenchSourceError, match=r"kb.jsonl:3"):
        load_kernelbench(str(path))
    path.write_text(json.dumps(good) + "\n")
    assert [p.task_name for p in load_kernelbench(str(path))] == ["kernelbench/L3/7_Net"]


@pytest.mark.parametrize("source", ["no/such/dir/at/all", "/definitely/not/here.jsonl", "README.md"])
def test_bad_sources_are_named(source: str) -> None:
    with pytest.raises(KernelBenchSourceError, match="KernelBench source|neither"):
        load_kernelbench(source)


def test_shared_copy_has_all_three_levels() -> None:
    source = kernelbench_jsonl()
    if not source.exists():
        pytest.skip(f"KernelBench data not found at {source}")
    problems = load_kernelbench(str(source))
    levels = {p.level for p in problems}
    assert levels == {1, 2, 3} and len({p.task_name for p in problems}) == len(problems)
