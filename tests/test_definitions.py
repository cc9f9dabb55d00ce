"""The code location loads, validates with Dagster's own tools, and its assets materialize for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from hip_assets.definitions import defs
from hip_assets.kernels import assets as kernel_assets
from hip_assets.tasks import assets as task_assets
from hip_assets.tasks import checks as task_checks
from hipforge.cli import app
from hipforge.store import Warehouse
from resources.executor import ExecutorResource
from resources.llm import LLMResource
from resources.warehouse import WarehouseResource
from tests.conftest import REPO_ROOT, kernelbench_jsonl

BIN = Path(sys.executable).parent


def test_definitions_load_with_pools_and_groups() -> None:
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert {"reference_tasks", "kernelbench_tasks"} <= keys
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name != "default", f"{key} has no group"
        assert node.pools, f"{key} takes no pool"


def test_every_automation_launches_a_named_job() -> None:
    """Runs of the sensors and the schedule say what they are in the run list, not __ASSET_JOB."""
    repo = defs.get_repository_def()
    launched = {d.name: d.job_name for d in (*repo.sensor_defs, *repo.schedule_defs) if d.name != "pool_waits"}
    assert not repo.get_sensor_def("pool_waits").targets  # it launches nothing: it tells runs why they wait
    assert launched == {"new_checkpoints": "checkpoint_reports", "new_task_files": "inbox",
                        "nightly_reevaluation": "nightly_reevaluation"}
    for name in set(launched.values()):
        assert repo.get_job(name).description


def test_the_demo_is_a_named_job_of_every_unpartitioned_asset() -> None:
    """`make demo` runs the `demo` job: everything but the per-model reports (its own runs, one per partition)
    and the nightly re-verification of an archive the demo has only just verified."""
    graph = defs.resolve_asset_graph()
    job = defs.resolve_job_def("demo")
    every = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert {key.to_user_string() for key in job.asset_layer.executable_asset_keys} == (
        every - {"kernelbench_report", "archive_reverification"})
    assert job.description


def test_the_asset_graph_links_every_data_flow() -> None:
    """What an asset reads is upstream of it in the graph: every task origin feeds translation, and a checkpoint
    partition's report reads the checkpoint the training assets wrote, and the archive reads the audit of its gate."""
    graph = defs.resolve_asset_graph()

    def parents(name: str) -> set[str]:
        return {key.to_user_string() for key in graph.get(dg.AssetKey(name)).parent_keys}

    assert {"reference_tasks", "kernelbench_tasks", "synthetic_tasks", "inbox_tasks"} <= parents("translated_kernels")
    assert {"sft_checkpoint", "rl_checkpoint"} <= parents("kernelbench_report")
    assert "verifier_audit" in parents("kernel_archive")  # the archive states what its gate's latest audit caught


@pytest.mark.parametrize(
    "command",
    [["dg", "check", "defs"], ["dagster", "definitions", "validate", "-m", "hip_assets.definitions"]],
    ids=["dg-check-defs", "dagster-definitions-validate"],
)
def test_dagster_tools_validate_the_definitions(command: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(REPO_ROOT), "PATH": f"{BIN}:{os.environ['PATH']}"}
    result = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_instance_limits_both_pools_to_one(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    try:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        assert instance.telemetry_enabled is False
    finally:
        instance.dispose()


def _materialize(selection: list[dg.AssetsDefinition], warehouse: Path, home: Path, run_config=None,
                 **resources: dg.ConfigurableResource):
    home.mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        result = dg.materialize(
            selection, instance=instance, run_config=run_config,
            resources={"warehouse": WarehouseResource(path=str(warehouse)), **resources},
        )
        assert result.success
        return result, instance.get_run_by_id(result.run_id)


def test_reference_tasks_materialize_and_lineage_prints_a_chain(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    result, run = _materialize([task_assets.reference_tasks, *task_checks.task_checks[:1]], db, tmp_path / "home")
    meta = result.asset_materializations_for_node("reference_tasks")[0].metadata
    assert meta["rejected"].value == 0, meta["rejections"].value
    assert meta["accepted"].value >= 40 and meta["composed_of_edges"].value > 0
    assert meta["run_id"].value == run.run_id
    checks = result.get_asset_check_evaluations()
    assert checks and all(c.passed for c in checks)

    with Warehouse(db).connect(read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT run_id) FROM tasks").fetchone()[0] == 1
        block_id = con.execute("SELECT task_id FROM tasks WHERE name = 'blocks/transformer_mlp'").fetchone()[0]

    out = CliRunner().invoke(app, ["lineage", block_id[:10], "--warehouse", str(db)])
    assert out.exit_code == 0, out.output
    assert "gemm/linear_gelu" in out.output and "gemm/linear_bias" in out.output  # two hops up
    as_json = json.loads(CliRunner().invoke(app, ["lineage", block_id, "--json", "--warehouse", str(db)]).output)
    parents = {c["label"].split(" ")[0] for c in as_json["ancestors"]}
    assert "gemm/linear_gelu" in parents
    shown = CliRunner().invoke(app, ["show", block_id, "--json", "--warehouse", str(db)])
    assert json.loads(shown.output)["run_id"] == run.run_id


def test_rematerializing_adds_no_duplicates(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    _materialize([task_assets.reference_tasks], db, tmp_path / "home1")
    result, _ = _materialize([task_assets.reference_tasks], db, tmp_path / "home2")
    meta = result.asset_materializations_for_node("reference_tasks")[0].metadata
    assert meta["new_rows"].value == 0
    with Warehouse(db).connect(read_only=True) as con:
        total, distinct = con.execute("SELECT count(*), count(DISTINCT name) FROM tasks").fetchone()
    assert total == distinct


def test_kernelbench_without_a_source_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIPFORGE_KERNELBENCH", raising=False)
    result, _ = _materialize([task_assets.kernelbench_tasks], tmp_path / "w.duckdb", tmp_path / "home",
                             run_config={"ops": {"kernelbench_tasks": {"config": {"source": ""}}}})
    meta = result.asset_materializations_for_node("kernelbench_tasks")[0].metadata
    assert meta["source"].value == "none configured" and meta["tasks"].value == 0


def test_kernelbench_from_jsonl(tmp_path: Path) -> None:
    source = kernelbench_jsonl()
    if not source.exists():
        pytest.skip(f"KernelBench data not found at {source}")
    config = {"source": str(source), "levels": [1, 2], "limit_per_level": 3}
    db = tmp_path / "w.duckdb"
    result, _ = _materialize([task_assets.kernelbench_tasks], db, tmp_path / "home",
                             run_config={"ops": {"kernelbench_tasks": {"config": config}}})
    meta = result.asset_materializations_for_node("kernelbench_tasks")[0].metadata
    assert meta["tasks"].value == 6 and meta["accepted"].value == 6
    with Warehouse(db).connect(read_only=True) as con:
        levels = con.execute("SELECT level, count(*) FROM tasks GROUP BY level ORDER BY level").fetchall()
    assert levels == [(1, 3), (2, 3)]


def test_inbox_files_are_ingested_good_and_bad(tmp_path: Path) -> None:
    from tests.test_task_model import GOOD

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "relu.py").write_text(GOOD)
    (inbox / "broken.py").write_text("class Model(:\n")
    db = tmp_path / "w.duckdb"
    config = {"folder": str(inbox), "files": []}
    result, _ = _materialize([task_assets.inbox_tasks], db, tmp_path / "home",
                             run_config={"ops": {"inbox_tasks": {"config": config}}})
    meta = result.asset_materializations_for_node("inbox_tasks")[0].metadata
    assert (meta["accepted"].value, meta["rejected"].value) == (1, 1)
    with Warehouse(db).connect(read_only=True) as con:
        rows = dict(con.execute("SELECT name, status FROM tasks").fetchall())
    assert rows == {"file/relu": "accepted", "file/broken": "rejected"}


def test_an_inbox_task_is_translated_like_every_other_origin(tmp_path: Path) -> None:
    """An accepted inbox file (origin 'file') reaches the translator and gets a kernel translated_from it."""
    from tests.test_task_model import GOOD

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "relu.py").write_text(GOOD)
    db = tmp_path / "w.duckdb"
    executor = ExecutorResource(backend="cpu", timed_trials=3, gate=False, workers=2)
    result, _ = _materialize([task_assets.inbox_tasks, kernel_assets.translated_kernels], db, tmp_path / "home",
                             run_config={"ops": {"inbox_tasks": {"config": {"folder": str(inbox), "files": []}}}},
                             executor=executor, llm=LLMResource())
    assert result.asset_materializations_for_node("translated_kernels")[0].metadata["evaluations"].value == 1
    with Warehouse(db).connect(read_only=True) as con:
        translated = con.execute(
            "SELECT t.origin, t.name FROM evaluations e JOIN lineage_edges l ON l.child_id = e.kernel_id "
            "AND l.relation = 'translated_from' JOIN tasks t ON t.task_id = l.parent_id AND t.task_id = e.task_id"
        ).fetchall()
    assert translated == [("file", "file/relu")]
