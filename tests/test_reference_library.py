"""The built-in reference library: coverage, catalog integrity, and every task runs on CPU at small scale."""

from __future__ import annotations

import ast
import collections
import shutil

import pytest
import torch

from hipforge.tasks import TaskError, check_tasks, smoke_scale
from hipforge.tasks.library import (
    LIBRARY_DIR,
    LibraryError,
    composition_depth,
    load_library,
)

TASKS = load_library()
BY_NAME = {task.name: task for task in TASKS}
MIN_PER_CATEGORY = {"elementwise": 8, "reductions": 8, "gemm": 8, "conv": 6, "losses": 4, "blocks": 5}


def _exec(source: str, name: str) -> dict:
    namespace: dict = {"__name__": f"library_task_{name.replace('/', '_')}"}
    exec(compile(source, f"<library:{name}>", "exec"), namespace)
    return namespace


def _outputs(result) -> list[torch.Tensor]:
    return list(result) if isinstance(result, tuple | list) else [result]


def test_library_size_and_coverage():
    assert len(TASKS) >= 44
    counts = collections.Counter(task.category for task in TASKS)
    for category, minimum in MIN_PER_CATEGORY.items():
        assert counts[category] >= minimum, (category, counts[category])
    assert set(counts) == set(MIN_PER_CATEGORY)


def test_names_unique_sorted_and_well_formed():
    names = [task.name for task in TASKS]
    assert names == sorted(set(names))
    for task in TASKS:
        category, stem = task.name.split("/")
        assert category == task.category
        assert (LIBRARY_DIR / category / f"{stem}.py").read_text(encoding="utf-8") == task.source
        assert task.description and "\n" not in task.description


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_task_defines_the_kernelbench_interface(task):
    tree = ast.parse(task.source)
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    assert {"Model", "get_inputs", "get_init_inputs"} <= defined
    sizes = [
        stmt
        for stmt in tree.body
        if isinstance(stmt, ast.Assign)
        and isinstance(stmt.value, ast.Constant)
        and type(stmt.value.value) is int
        and stmt.value.value > 16
    ]
    assert sizes, "sizes must be module-level int constants so tools can shrink them"


def test_composed_of_parts_exist_and_chains_are_deep():
    for task in TASKS:
        for part in task.composed_of:
            assert part in BY_NAME, (task.name, part)
    # Every multi-op gemm/conv/blocks task records its parts.
    for name in [
        "gemm/linear_bias_relu",
        "gemm/linear_gelu",
        "gemm/linear_scale_residual",
        "conv/conv2d_relu",
        "conv/conv2d_bn_relu",
    ]:
        assert BY_NAME[name].composed_of, name
    assert all(task.composed_of for task in TASKS if task.category == "blocks")
    depth = composition_depth(TASKS)
    # block -> gemm/linear_* -> simpler: lineage needs real multi-level chains.
    assert depth["blocks/transformer_mlp"] >= 3
    assert depth["blocks/prenorm_mlp"] >= 4
    assert "gemm/linear_gelu" in BY_NAME["blocks/transformer_mlp"].composed_of
    assert "gemm/linear_bias" in BY_NAME["gemm/linear_gelu"].composed_of


def test_missing_part_is_named(tmp_path):
    bad = tmp_path / "catalog.toml"
    bad.write_text('[composed_of]\n"gemm/linear_gelu" = ["gemm/linear_bias", "elementwise/nope"]\n')
    with pytest.raises(LibraryError, match="elementwise/nope"):
        load_library(catalog_path=bad)


def test_cycle_is_rejected(tmp_path):
    bad = tmp_path / "catalog.toml"
    bad.write_text(
        '[composed_of]\n"gemm/linear_bias" = ["gemm/linear_gelu"]\n'
        '"gemm/linear_gelu" = ["gemm/linear_bias"]\n'
    )
    with pytest.raises(LibraryError, match="cycle"):
        load_library(catalog_path=bad)


def test_task_without_model_is_rejected(tmp_path):
    root = tmp_path / "library"
    shutil.copytree(LIBRARY_DIR / "elementwise", root / "elementwise")
    (root / "elementwise" / "broken.py").write_text("def get_inputs():\n    return []\n")
    with pytest.raises(LibraryError, match="elementwise/broken"):
        load_library(root=root)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_full_size_shapes_on_meta_device(task):
    """At benchmark scale (no memory touched): inputs are GPU-sized and forward's shapes work out."""
    ns = _exec(task.source, task.name)
    with torch.device("meta"):
        model = ns["Model"](*ns["get_init_inputs"]())
        inputs = ns["get_inputs"]()
        biggest = max(t.numel() for t in inputs if isinstance(t, torch.Tensor))
        assert 2**20 <= biggest <= 2**26 + 2**25, biggest
        outputs = _outputs(model(*inputs))
    assert all(isinstance(out, torch.Tensor) for out in outputs)


def test_every_task_runs_at_smoke_scale_through_the_task_model():
    """The project's own smoke tool (the one the pipeline uses) accepts every library task."""
    outcomes = dict(check_tasks([(t.name, t.source) for t in TASKS], workers=2))
    failures = {name: str(o) for name, o in outcomes.items() if isinstance(o, TaskError)}
    print(f"\nreference library: {len(outcomes) - len(failures)}/{len(TASKS)} run at smoke scale")
    assert not failures, failures
    for name, run in outcomes.items():
        assert run.output_shapes and run.seconds < 10, name


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_task_output_is_finite_varied_and_inputs_fresh(task):
    ns = _exec(smoke_scale(task.source).source, task.name)
    torch.manual_seed(0)
    model = ns["Model"](*ns["get_init_inputs"]())
    inputs = ns["get_inputs"]()
    assert inputs and all(t.numel() <= 2**20 for t in inputs if isinstance(t, torch.Tensor))
    with torch.no_grad():
        outputs = _outputs(model(*inputs))
    for out in outputs:
        assert isinstance(out, torch.Tensor)
        values = out.double()
        assert torch.isfinite(values).all()
        if out.numel() > 1:
            assert values.max() > values.min(), "output is constant"
        else:
            assert values.abs().item() > 0
    # Fresh inputs on every call.
    again = ns["get_inputs"]()
    floats = [(a, b) for a, b in zip(inputs, again, strict=True) if a.is_floating_point()]
    assert floats and any(not torch.equal(a, b) for a, b in floats)
