"""SFT/RL records: chat format, content-addressed snapshots, the dataset export, and their lineage rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hipforge.cli import app
from hipforge.store import Warehouse
from hipforge.store.checkpoints import latest_checkpoint
from hipforge.store.lineage import lineage
from hipforge.store.records import latest_snapshot, snapshot_record_ids
from hipforge.tasks.library import library_task
from hipforge.train import store
from hipforge.train.records import export, load_jsonl, rl_record, sft_record, snapshot_id

TASK = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
KERNEL = "import os\nfrom torch.utils.cpp_extension import load_inline\nclass ModelNew:\n    pass\n"


def test_sft_record_is_a_chat_prompt_with_the_kernel_as_completion() -> None:
    record = sft_record("t1", "elementwise/relu", TASK, "k1", KERNEL, 1.7)
    assert [m["role"] for m in record.prompt] == ["system", "user"]
    assert "ModelNew" in record.prompt[0]["content"] and TASK.rstrip() in record.prompt[1]["content"]
    assert record.completion == [{"role": "assistant", "content": KERNEL}]
    brief = sft_record("t1", "elementwise/relu", TASK, "k1", KERNEL, 1.7, system="brief")
    assert brief.record_id != record.record_id and len(brief.prompt[0]["content"]) < len(record.prompt[0]["content"])
    with pytest.raises(ValueError, match="no ModelNew"):
        sft_record("t1", "relu", TASK, "k2", "print('hi')", 1.0)
    with pytest.raises(ValueError, match="unknown system prompt"):
        sft_record("t1", "relu", TASK, "k1", KERNEL, 1.0, system="long")


def test_rl_record_carries_the_lessons_and_the_eval_source() -> None:
    record = rl_record("t1", "relu", TASK, "SMOKE", "Lessons: 1. Stray markdown fences")
    assert "Stray markdown fences" in record.prompt[-1]["content"]
    assert record.completion == [] and record.eval_source == "SMOKE" and record.task_source == TASK


def test_snapshot_ids_depend_on_the_records_not_their_order() -> None:
    a, b = sft_record("t1", "a", TASK, "k1", KERNEL, 1.0), rl_record("t2", "b", TASK, TASK, "")
    assert snapshot_id([a, b]) == snapshot_id([b, a]) != snapshot_id([a])
    with pytest.raises(ValueError, match="empty"):
        snapshot_id([])


def test_export_writes_parquet_and_jsonl_that_load_back(tmp_path: Path) -> None:
    from datasets import Dataset

    records = [sft_record("t1", "a", TASK, "k1", KERNEL, 1.0), sft_record("t2", "b", TASK, "k2", KERNEL + "#", 2.0)]
    paths = export(records, tmp_path, "sft")
    assert load_jsonl(Path(paths["jsonl"])) == records
    data = Dataset.from_parquet(paths["parquet"])
    assert data.num_rows == 2 and data[0]["completion"][0]["content"] == KERNEL
    with pytest.raises(FileNotFoundError, match="materialize"):
        load_jsonl(tmp_path / "missing.jsonl")


def test_records_and_checkpoints_carry_lineage(warehouse: Warehouse) -> None:
    sft = sft_record("t1", "a", TASK, "k1", KERNEL, 1.0)
    rl = rl_record("t1", "a", TASK, TASK, "")
    snapshot = snapshot_id([sft, rl])
    store.store_records(warehouse, [sft, rl], snapshot, "exports/x.jsonl", "run-1")
    assert latest_snapshot(warehouse, "sft") == (snapshot, "exports/x.jsonl")
    row = {"checkpoint_id": "sft-abc", "stage": "sft", "base_model": "tiny", "path": "ckpt", "data_snapshot": snapshot,
           "hyperparameters": {"lr": 0.1}, "metrics": {"loss": [[1, 2.0]]}}
    store.store_checkpoint(warehouse, row, snapshot_record_ids(warehouse, snapshot), "run-1")
    stored = latest_checkpoint(warehouse, "sft")
    assert json.loads(stored["hyperparameters"]) == {"lr": 0.1} and stored["run_id"] == "run-1"
    down = lineage(warehouse, "k1", "descendants")  # kernel -> record -> checkpoint
    assert [(c.relation, c.id) for c in down.children] == [("recorded_as", sft.record_id)]
    assert [(c.relation, c.id) for c in down.children[0].children] == [("trained_into", "sft-abc")]
    with pytest.raises(LookupError, match="rl_checkpoint"):
        latest_checkpoint(warehouse, "rl")
    # every id lineage prints can be looked up again, from the CLI too
    runner = CliRunner()
    shown = runner.invoke(app, ["show", "sft-a", "--warehouse", str(warehouse.path)])
    assert shown.exit_code == 0 and "checkpoints" in shown.output and "sft-abc" in shown.output
    walked = runner.invoke(app, ["lineage", sft.record_id[:8], "--warehouse", str(warehouse.path)])
    assert walked.exit_code == 0, walked.output
    assert "trained_into → checkpoint sft-abc" in walked.output and "recorded_as" in walked.output
    missing = runner.invoke(app, ["show", "zzzz", "--warehouse", str(warehouse.path)])
    assert missing.exit_code == 1 and "starting with 'zzzz'" in missing.output  # the quote closes


def test_training_never_sees_kernelbench_or_its_near_duplicates(warehouse: Warehouse) -> None:
    relu, gelu = library_task("elementwise/relu").source, library_task("elementwise/gelu_tanh").source

    def row(task_id: str, origin: str, source: str) -> dict[str, object]:
        return {"task_id": task_id, "name": task_id, "origin": origin, "source": source, "status": "accepted"}

    warehouse.insert("tasks", [row("ref-only", "reference", relu)], "run-0")
    assert [t.task_id for t in store.training_tasks(warehouse)] == ["ref-only"]  # no KernelBench stored: no guard
    with warehouse.connect() as con:
        con.execute("DELETE FROM tasks")
    warehouse.insert("tasks", [row("kb-relu", "kernelbench", relu),
                               row("syn-relu", "synthetic", relu.replace("torch.relu", "torch.relu ")),
                               row("ref-gelu", "reference", gelu), row("inbox-gelu", "file", gelu + "\n")], "run-1")
    assert sorted(t.task_id for t in store.training_tasks(warehouse)) == ["inbox-gelu", "ref-gelu"]
    rl = store.rl_records_from_tasks(warehouse, "cpu", "", "full")
    assert sorted(r.task_id for r in rl) == ["inbox-gelu", "ref-gelu"]
