"""The second size of a task: every size and init argument that can change does, the model stays valid
(the reference runs), divisibility by powers of two up to 64 and the model's divisors hold, cost does not grow.

KernelBench problems are read from ``<repo>/../shared/kernelbench`` (or HIPFORGE_KERNELBENCH_PATH); the
tests that need them skip when they are absent.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from hipforge.bench.kernelbench import load_kernelbench
from hipforge.tasks import TaskError
from hipforge.tasks.library import load_library
from hipforge.tasks.reference_run import check_task
from hipforge.tasks.resize import KEPT_FLOAT, Resized, _code_ints, _input_elements, describe, second_size
from hipforge.tasks.smoke import smoke_scale
from hipforge.tasks.source import parse_source, size_constants

PROBLEMS_FILE = "kernelbench_l1_l2a_l3.jsonl"
LIBRARY = {task.name: task.source for task in load_library()}


def kernelbench_problems() -> dict[str, str]:
    override = os.environ.get("HIPFORGE_KERNELBENCH_PATH")
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "shared" / "kernelbench"
    if path.is_dir():
        path = path / PROBLEMS_FILE
    if not path.is_file():
        pytest.skip(f"KernelBench problems not found at {path} (set HIPFORGE_KERNELBENCH_PATH)")
    return {p.task_name: p.source for p in load_kernelbench(str(path))}


def _init_arg_names(source: str) -> list[str]:
    fn = next(n for n in parse_source(source).body if isinstance(n, ast.FunctionDef) and n.name == "get_init_inputs")
    return [node.id for node in ast.walk(fn) if isinstance(node, ast.Name)]


def _assert_resized(name: str, source: str) -> Resized | None:
    resized = second_size(source)
    if resized is None and "/L3/" in name:  # a net whose code fixes every size (a classifier for 224x224)
        code = _code_ints(parse_source(source))
        assert all(v in code or v < 2 for v in size_constants(source).values() if type(v) is int), name
        return None
    assert resized is not None, name
    assert resized.source != source and resized.changed, name
    parse_source(resized.source)
    after = size_constants(resized.source)
    for key, (old, new) in resized.changed.items():
        assert old != new, (name, key)
        if ":" not in key:
            assert after[key] == new, (name, key)
    before = size_constants(source)
    for arg in _init_arg_names(source):  # every float passed to the model changes unless it is eps-like
        value = before.get(arg)
        if type(value) is float and value != 0.0 and not KEPT_FLOAT.search(arg):
            assert arg in resized.changed, (name, arg)
    grown = _input_elements(parse_source(resized.source))
    assert grown <= max(_input_elements(parse_source(source)), 1 << 20), (name, describe(resized.changed))
    return resized


def test_every_library_task_has_a_second_size_at_full_and_smoke_scale():
    for name, source in LIBRARY.items():
        _assert_resized(name, source)
        _assert_resized(name, smoke_scale(source).source)


def test_every_kernelbench_problem_has_a_second_size_at_full_and_smoke_scale():
    for name, source in kernelbench_problems().items():
        _assert_resized(name, source)
        _assert_resized(name, smoke_scale(source).source)


def _runs(items: dict[str, str]) -> None:
    """The second size of each smoke source (what the cpu backend evaluates) still runs as a reference."""
    failed = {}
    for name, source in items.items():
        smoke = check_task(source, name).source
        resized = _assert_resized(name, smoke)
        assert resized is not None, name
        try:
            check_task(resized.source, name, scale="full", time_limit_s=60, memory_limit_mb=4096)
        except TaskError as e:
            failed[name] = f"{describe(resized.changed)}: {e}"
    assert not failed, failed


def test_library_second_sizes_run():
    _runs(LIBRARY)


def test_a_sample_of_kernelbench_l1_l2_second_sizes_run():
    problems = kernelbench_problems()
    _runs({name: source for i, (name, source) in enumerate(problems.items()) if "/L3/" not in name and i % 5 == 0})


TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, groups, scale, eps):
        super().__init__()
        self.norm = nn.GroupNorm(groups, features, eps=eps)
        self.scale = scale

    def forward(self, x):
        return self.norm(x) * self.scale


batch_size = 16
features = 96
rows = 4096
num_groups = 32
scale = 0.5
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, features, rows)]


def get_init_inputs():
    return [features, num_groups, scale, eps]
'''


def test_sizes_keep_their_power_of_two_factor_and_divisors_and_floats_move():
    resized = second_size(TASK)
    assert resized is not None
    new = size_constants(resized.source)
    assert new["batch_size"] < 16 and new["num_groups"] == 32 and new["eps"] == 1e-5
    assert new["features"] != 96 and new["features"] % 32 == 0  # groups still divide the channels
    assert new["rows"] != 4096 and new["rows"] % 64 == 0 and new["rows"] <= 4096
    assert new["scale"] != 0.5 and new["scale"] > 0
    assert describe(resized.changed).startswith(f"batch_size={new['batch_size']}, features={new['features']}")


def test_no_size_constants_means_no_second_size():
    source = TASK.split("batch_size = 16")[0] + '''
def get_inputs():
    return [torch.randn(3, 4)]


def get_init_inputs():
    return []
'''
    assert second_size(source) is None
