"""Sanity checks and screening: what gets in, what is rejected, and that rejections are stored."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from hipforge.store import Warehouse
from hipforge.tasks import task_id
from hipforge.tasks.library import load_library
from hipforge.tasks.synth import (
    MODES,
    PRESETS,
    Budget,
    Rejection,
    Screen,
    SeedTask,
    SynthConfig,
    compose,
    sanity_check,
    synthesize,
    synthesize_offline,
)
from hipforge.tasks.synth.pipeline import store
from hipforge.tasks.synth.probe import PROBE_CODES

SEEDS = [SeedTask(t.name, t.source) for t in load_library()]


def module(
    forward: str, inputs: str = "[torch.randn(batch_size, features)]", args: str = "x", header: str = ""
) -> str:
    return f"""import torch
import torch.nn as nn
{header}

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {args}):
        return {forward}


batch_size = 8
features = 64


def get_inputs():
    return {inputs}


def get_init_inputs():
    return []
"""


TWO_INPUTS = "[torch.randn(batch_size, features), torch.randn(batch_size, features)]"
BAD = {
    "constant": (module("x * 0.0 + 3.0"), "constant_output"),
    "saturated": (module("torch.sigmoid(torch.exp(x) + 50.0)"), "constant_output"),
    "input copy": (module("torch.relu(x) - torch.relu(-x)"), "input_copy"),
    "eval dropout only": (module("nn.functional.dropout(x, p=0.5, training=False)"), "input_copy"),
    "ignores an input": (module("torch.tanh(x) * 2.0", TWO_INPUTS, "x, y"), "unused_input"),
    "non-deterministic": (module("x * random.random()", header="import random"), "non_deterministic"),
    "banned": (module("x + len(os.popen('id').read())", header="import os"), "banned_construct"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_degenerate_modules_are_rejected_with_the_right_reason(name: str) -> None:
    source, code = BAD[name]
    result = sanity_check(source, name)
    assert isinstance(result, Rejection) and result.code == code, result
    assert result.message


def test_a_good_module_passes_and_budgets_apply() -> None:
    good = module("torch.tanh(x) * y", TWO_INPUTS, "x, y")
    assert not isinstance(sanity_check(good, "good"), Rejection)
    slow = sanity_check(good, "slow", Budget(max_forward_s=1e-9))
    assert isinstance(slow, Rejection) and slow.code == "too_slow"


def _renamed(source: str) -> str:
    """The same task with other variable names and other sizes: a near-duplicate, not an exact one."""
    source = re.sub(r"\bh(\d)\b", r"out\1", source)
    return re.sub(r"^batch_size = \d+$", "batch_size = 3", source, flags=re.M)


def test_duplicates_and_near_duplicates_are_rejected_and_stored(warehouse: Warehouse) -> None:
    original, stored_task = compose(11, 0), SEEDS[0]
    copy = replace(original, name="copy", source="# a comment\n" + original.source)
    near = replace(original, name="near", source=_renamed(original.source))
    relabelled = replace(original, name="relabelled", source=stored_task.source)
    assert task_id(copy.source) == task_id(original.source) != task_id(near.source)
    outcomes = Screen({stored_task.task_id: stored_task.name}, [])([original, copy, near, relabelled])
    assert [o.accepted for o in outcomes] == [True, False, False, False]
    assert outcomes[1].result.code == "duplicate" and original.name in outcomes[1].result.message
    assert outcomes[2].result.code == "near_duplicate" and original.name in outcomes[2].result.message
    assert outcomes[3].result.code == "duplicate" and stored_task.name in outcomes[3].result.message

    store(outcomes, warehouse, "run-dupes")
    with warehouse.connect(read_only=True) as con:
        rows = {
            r[0]: r[1:]
            for r in con.execute(
                "SELECT name, task_id, status, reject_code, reject_reason FROM tasks ORDER BY name"
            ).fetchall()
        }
    assert rows[original.name][:2] == (task_id(original.source), "accepted")
    assert rows["copy"][1:3] == ("rejected", "duplicate") and rows["copy"][0] != rows[original.name][0]
    assert rows["near"][1:3] == ("rejected", "near_duplicate") and rows["near"][3]


def test_near_duplicate_threshold_is_configurable() -> None:
    original = compose(11, 0)
    near = replace(original, name="near", source=_renamed(original.source))
    lenient = Screen({}, [], threshold=1.01)([original, near])
    assert all(o.accepted for o in lenient)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_mode_fills_its_count_with_modules_that_pass(seed: int, warehouse: Warehouse) -> None:
    config = SynthConfig(counts={mode: 3 for mode in MODES}, seed=seed)
    summary = synthesize(config, SEEDS, warehouse, f"run-{seed}")
    assert all(c["accepted"] == 3 for c in summary.per_mode().values()), summary.rejections()
    # generated modules may be degenerate (a saturated epilogue), never broken
    assert all(r.code in PROBE_CODES for _, r in summary.rejections()), summary.rejections()
    with warehouse.connect(read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM tasks WHERE origin = 'synthetic'").fetchone()[0]
    assert stored == len(summary.outcomes)


def test_offline_synthesis_matches_the_stored_one_and_writes_nothing(warehouse: Warehouse) -> None:
    config = SynthConfig(counts={mode: 2 for mode in MODES}, seed=3)
    offline = synthesize_offline(config, SEEDS)
    stored = synthesize(config, SEEDS, warehouse, "run-offline")
    assert [(o.row_id, o.accepted) for o in offline.outcomes] == [(o.row_id, o.accepted) for o in stored.outcomes]
    assert offline.new_rows == 0 and all(c["accepted"] == 2 for c in offline.per_mode().values())
    assert "corpus" in PRESETS and sum(PRESETS["corpus"].values()) > 5000
