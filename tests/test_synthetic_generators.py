"""The three generators: operator library, composition shape rules, mutation edits, spec/module agreement."""

from __future__ import annotations

import ast
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter

import pytest

from hipforge.tasks import check_task, size_constants, smoke_scale, task_id
from hipforge.tasks.library import load_library
from hipforge.tasks.source import parse_source
from hipforge.tasks.synth import MODES, OPERATORS, SeedTask, compose_chain, draft, mutate, sample_spec
from hipforge.tasks.synth import operators as operator_module
from hipforge.tasks.synth.chain import Chain
from hipforge.tasks.synth.edits import refuse, resize, substitute
from hipforge.tasks.synth.mutate import tidy
from hipforge.tasks.synth.reorder import reorder
from tests.conftest import kernelbench_jsonl

SEEDS = [SeedTask(t.name, t.source) for t in load_library()]
RANK = {"feat": 2, "seq": 3, "image": 4, "volume": 5}


def test_the_template_library_has_fourteen_documented_operators() -> None:
    assert len(OPERATORS) == 14 and len({op.name for op in OPERATORS}) == 14
    for op in OPERATORS:
        assert op.doc and op.layouts and op.name in operator_module.__doc__


@pytest.mark.parametrize("mode", MODES)
def test_a_fixed_seed_gives_the_same_sources(mode: str) -> None:
    first = [draft(mode, 7, i, SEEDS).source for i in range(4)]
    assert first == [draft(mode, 7, i, SEEDS).source for i in range(4)]
    assert first != [draft(mode, 8, i, SEEDS).source for i in range(4)]
    assert len(set(first)) == 4


def test_sources_do_not_depend_on_the_process() -> None:
    """Dagster runs assets in fresh processes: hash randomization must not reach the generators."""
    script = (
        "from hipforge.tasks.library import load_library\n"
        "from hipforge.tasks.synth import MODES, SeedTask, draft\n"
        "seeds = [SeedTask(t.name, t.source) for t in load_library()]\n"
        "print(repr([draft(m, 4, i, seeds).source for m in MODES for i in range(3)]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr([draft(m, 4, i, SEEDS).source for m in MODES for i in range(3)])


def _check_rules(chain: Chain, env: dict) -> dict:
    """Independent of the rules' own code: ranks follow layouts, feature dims equal their constants."""
    shapes = chain.shapes(env)
    for step in chain.steps:
        shape = shapes[step.out.var]
        assert len(shape) == RANK[step.out.layout], (step.op, shape)
        assert shape[1 if RANK[step.out.layout] > 3 else -1] == env[step.out.feature], (step.op, shape)
        assert shape[0] == env["batch_size"] and all(n >= 1 for n in shape)
    return shapes


def test_compositions_respect_shape_rules_across_many_seeds() -> None:
    used: Counter[str] = Counter()
    for seed in range(150):
        chain = compose_chain(seed)
        assert 3 <= len(chain.steps) <= 5 and len(set(chain.operators)) == len(chain.operators)
        by_name = {op.name: op for op in OPERATORS}
        layouts = [chain.layout, *(s.out.layout for s in chain.steps)]
        assert all(layouts[i] in by_name[s.op].layouts for i, s in enumerate(chain.steps))
        _check_rules(chain, chain.env)
        _check_rules(chain, chain.smoke_env())
        used.update(chain.operators)
    assert set(used) == {op.name for op in OPERATORS}, "some operator is never composed"


def test_inferred_shapes_match_a_real_run_at_smoke_scale() -> None:
    for seed in range(0, 60, 10):
        chain = compose_chain(seed)
        run = check_task(chain.render("shape check"), f"composition-{seed}")
        env = {**chain.env, **size_constants(run.source)}
        assert run.output_shapes == [chain.shapes(env)[chain.output.var]], chain.operators


def test_mutation_changes_the_task_and_records_its_seed() -> None:
    by_id = {s.task_id: s for s in SEEDS}
    kinds: Counter[str] = Counter()
    for index in range(40):
        variant = mutate(SEEDS, 3, index)
        (parent,) = variant.parents
        child = task_id(variant.source)
        assert parent in by_id and child != parent
        assert variant.edges(child) == [{"child_id": child, "parent_id": parent, "relation": "mutated_from"}]
        doc = variant.source.split('"""')[1]
        assert doc.startswith(f"Mutated from {by_id[parent].name}: ")
        kinds.update(re.findall(r"(op substitution|reordering|fusion pattern|shape and batch changes):", doc))
    assert {"op substitution", "fusion pattern", "shape and batch changes"} <= set(kinds)


@pytest.mark.parametrize("edit", [substitute, reorder, refuse, resize], ids=lambda e: e.__name__)
def test_each_edit_finds_a_place_in_the_library_and_the_variant_runs(edit) -> None:
    variants = []
    for seed in SEEDS:
        tree = parse_source(seed.source)
        if note := edit(tree, random.Random(0)):
            variants.append((seed, tidy(ast.unparse(tree)), note))
    assert variants, f"{edit.__name__} applies to no library task"
    seed, source, note = variants[0]
    assert task_id(source) != seed.task_id, note
    check_task(source, f"{edit.__name__} of {seed.name}")


def test_kernelbench_tasks_are_mutation_seeds_too() -> None:
    path = kernelbench_jsonl()
    if not path.exists():
        pytest.skip(f"KernelBench data not found at {path}")
    rows = [json.loads(line) for line in path.read_text().splitlines()[:40]]
    pool = [SeedTask(f"kernelbench/L{r['level']}/{r['problem_id']}_{r['name']}", r["code"]) for r in rows]
    for index in range(5):
        variant = mutate(pool, 0, index)
        assert (
            variant.parents[0] in {s.task_id for s in pool} and task_id(variant.source) != variant.parents[0]
        )


def _run(source: str):
    import torch

    namespace: dict = {}
    exec(compile(smoke_scale(source).source, "<spec module>", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"](*namespace["get_init_inputs"]())
    with torch.no_grad():
        return model(*namespace["get_inputs"]()), namespace


def test_constraint_module_does_what_its_spec_says() -> None:
    import torch

    checked: Counter[str] = Counter()
    for seed in range(40):
        spec = sample_spec(seed)
        text, source = spec.text(), spec.chain.render(spec.text())
        constants = size_constants(source)
        tensors = text.split("Tensors:")[1]
        for name, value in re.findall(
            r"(\w+)=(-?\d+(?:\.\d+)?)", tensors
        ):  # input sizes, constructor arguments
            assert constants[name] == float(value), (name, text)
        out, ns = _run(source)
        stated = re.search(r"output: float32, shape \(([\d, ]+)\)", text)[1]
        assert out.dim() == len(stated.split(","))
        steps = [line for line in text.split("Tensors:")[0].splitlines() if re.match(r"\s+\d+\. ", line)]
        last = next(line for line in reversed(steps) if "dropout" not in line)  # eval dropout: identity
        if m := re.search(r"(log-)?softmax over dim (-?\d+)", last):
            probs = out.exp() if m[1] else out
            assert torch.allclose(probs.sum(int(m[2])), torch.ones(()), atol=1e-5), text
            checked["softmax"] += 1
        elif m := re.search(r"clamp to \[(\w+), (\w+)\]", last):
            assert out.min() >= ns[m[1]] and out.max() <= ns[m[2]], text
            checked["clamp"] += 1
        elif "layer normalization over the last dimension" in last:
            assert torch.allclose(out.mean(-1), torch.zeros(()), atol=1e-4), text
            checked["layer norm"] += 1
        elif m := re.search(r"(relu|sigmoid|tanh) activation", last):
            low, high = {"relu": (0, float("inf")), "sigmoid": (0, 1), "tanh": (-1, 1)}[m[1]]
            assert out.min() >= low and out.max() <= high, text
            checked[m[1]] += 1
    assert checked["softmax"] >= 3 and len(checked) >= 3, checked
