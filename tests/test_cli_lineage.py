"""`hipforge lineage` and `hipforge show` on a real DuckDB warehouse, through the command's entry point: walks
that survive any graph (a cycle that misses the root, branches, the depth limit), and every id the walk prints
can be looked up again by both commands."""

from __future__ import annotations

import json
import re

import pytest

from hipforge.cli import app
from hipforge.store import Warehouse
from hipforge.store.lineage import MAX_DEPTH
from hipforge.train import store
from hipforge.train.records import sft_record, snapshot_id

TASK = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
KERNEL = "from torch.utils.cpp_extension import load_inline\nclass ModelNew:\n    pass\n"
PRINTED_ID = re.compile(r"→ \w+ (\S+)")  # "relation → kind id  label"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        app(list(args), prog_name="hipforge")
    except SystemExit as exited:
        code = exited.code or 0
    else:
        code = 0
    out, err = capsys.readouterr()
    return int(code), out, err


def _kernels(warehouse: Warehouse, ids: list[str]) -> None:
    warehouse.insert("kernels", [{"kernel_id": k, "task_id": "task-0001", "source": KERNEL + f"# {k}",
                                  "agent": "evolver"} for k in ids], "run-1")


def _edges(warehouse: Warehouse, edges: list[tuple[str, str, str]]) -> None:
    warehouse.insert("lineage_edges", [{"child_id": c, "parent_id": p, "relation": r} for c, p, r in edges], "run-1")


@pytest.fixture
def graph(warehouse: Warehouse) -> Warehouse:
    """kernel a -> b -> c -> b (evolution's cycle that misses the root), a branching to a second parent and to
    the task, and a's record and checkpoint below it. kern-b2 is linked to nothing: its id starts with kern-b's."""
    warehouse.insert("tasks", [{"task_id": "task-0001", "name": "relu", "origin": "reference", "source": TASK,
                                "status": "accepted"}], "run-1")
    _kernels(warehouse, ["kern-a", "kern-b", "kern-c", "kern-d", "kern-b2"])
    _edges(warehouse, [("kern-a", "kern-b", "evolved_from"), ("kern-b", "kern-c", "evolved_from"),
                       ("kern-c", "kern-b", "evolved_from"), ("kern-a", "kern-d", "inspired_by"),
                       ("kern-d", "task-0001", "translated_from"), ("kern-c", "task-0001", "translated_from")])
    record = sft_record("task-0001", "relu", TASK, "kern-a", KERNEL, 1.5)
    store.store_records(warehouse, [record], snapshot_id([record]), "exports/x.jsonl", "run-1")
    row = {"checkpoint_id": f"sft-{record.record_id[:12]}", "stage": "sft", "base_model": "tiny", "path": "ckpt",
           "hyperparameters": {}, "metrics": {}}
    store.store_checkpoint(warehouse, row, [record.record_id], "run-1")
    return warehouse


def test_every_printed_id_can_be_looked_up(graph: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "lineage", "kern-a", "--warehouse", str(graph.path))
    assert code == 0, err
    printed = set(PRINTED_ID.findall(out)) | {out.split()[1]}  # and the root, "kind id" in the first line
    assert len(printed) >= 7, out  # the root, parents, grandparents, the task, the record and its checkpoint
    for node_id in printed:
        for command in ("show", "lineage"):
            code, out, err = cli(capsys, command, node_id, "--warehouse", str(graph.path))
            assert code == 0 and node_id in out, f"{command} {node_id}: {err}"


def test_a_cycle_that_misses_the_root_expands_each_node_once(graph: Warehouse,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "lineage", "kern-a", "--warehouse", str(graph.path))
    assert code == 0, err
    expanded = [PRINTED_ID.search(line).group(1) for line in out.splitlines()
                if PRINTED_ID.search(line) and "(shown above)" not in line]
    assert len(expanded) == len(set(expanded)), out  # without the visited set b and c repeat to the depth limit
    assert "(shown above)" in out  # the cycle's way back to b is a reference, and so is the task's second path
    assert {"kern-b", "kern-c", "kern-d", "task-0001"} <= set(expanded)  # both branches are walked


def test_the_walk_stops_at_the_depth_limit(warehouse: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    chain = [f"k{i:04d}" for i in range(MAX_DEPTH + 10)]
    _kernels(warehouse, chain)
    _edges(warehouse, [(child, parent, "evolved_from") for child, parent in zip(chain, chain[1:], strict=False)])
    code, out, err = cli(capsys, "lineage", chain[0], "--json", "--warehouse", str(warehouse.path))
    assert code == 0, err
    node, depth = {"children": json.loads(out)["ancestors"]}, 0
    while node["children"]:
        node, depth = node["children"][0], depth + 1
    assert depth == MAX_DEPTH and node["id"] == chain[MAX_DEPTH]


@pytest.mark.parametrize("node_id", ["zzzz", "kern-", "abc"])
def test_an_id_that_finds_no_single_row_is_one_well_formed_line(graph: Warehouse, capsys: pytest.CaptureFixture[str],
                                                                 node_id: str) -> None:
    code, out, err = cli(capsys, "show", node_id, "--warehouse", str(graph.path))
    assert code == 1 and not out and len(err.strip().splitlines()) == 1, err
    quoted = re.search(r"'([^']*)'", err)  # the id is quoted, and the quote closes
    assert quoted and quoted.group(1) == node_id, err


def test_show_links_the_run_that_wrote_the_row(graph: Warehouse, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPFORGE_DAGSTER_URL", "http://ui.example:3000/")
    code, out, err = cli(capsys, "show", "kern-a", "--warehouse", str(graph.path))
    assert code == 0, err
    assert "run: http://ui.example:3000/runs/run-1" in out.splitlines()
