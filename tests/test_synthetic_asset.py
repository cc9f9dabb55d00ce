"""The synthetic_tasks asset materializes against a temporary DuckDB, with lineage and its check."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from hip_assets.tasks import assets as tasks
from hip_assets.tasks import checks, synthetic
from hipforge.store import Warehouse
from hipforge.tasks.synth import load_seeds
from resources.warehouse import WarehouseResource

COUNTS = {"composition": 3, "mutation": 3, "constraint": 3}
SMALL = {**COUNTS, "seed": 5, "near_duplicate_threshold": 0.95}


def _materialize(db: Path, home: Path, selection: list, config: dict) -> dg.ExecuteInProcessResult:
    home.mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        result = dg.materialize(
            selection,
            instance=instance,
            resources={"warehouse": WarehouseResource(path=str(db))},
            run_config={"ops": {"synthetic_tasks": {"config": config}}},
        )
        assert result.success
        return result


def test_synthetic_tasks_materialize_with_lineage_and_a_passing_check(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    selection = [tasks.reference_tasks, synthetic.synthetic_tasks, checks.synthetic_tasks_distinct]
    result = _materialize(db, tmp_path / "home", selection, SMALL)
    meta = result.asset_materializations_for_node("synthetic_tasks")[0].metadata
    assert {mode: c["accepted"] for mode, c in meta["per_mode_counts"].value.items()} == COUNTS
    assert meta["accepted"].value == 9 and meta["mutation_seeds"].value == 57
    assert meta["run_id"].value == result.run_id and meta["lineage_edges"].value > 0
    (check,) = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["tasks"].value == 9
    assert (
        check.metadata["threshold"].value == SMALL["near_duplicate_threshold"]
    )  # the run's, not the default

    with Warehouse(db).connect(read_only=True) as con:
        edges = con.execute("""
            SELECT e.relation, e.parent_id, p.origin FROM lineage_edges e
            JOIN tasks c ON c.task_id = e.child_id AND c.origin = 'synthetic'
            LEFT JOIN tasks p ON p.task_id = e.parent_id""").fetchall()
        rows = con.execute(
            "SELECT category, status, reject_code, reject_reason, run_id FROM tasks "
            "WHERE origin = 'synthetic'"
        ).fetchall()
    relations = {relation for relation, _, _ in edges}
    assert relations == {"mutated_from", "composed_of", "inspired_by"}
    assert all(origin == "reference" for relation, _, origin in edges if relation == "mutated_from")
    assert all(parent.startswith("operator/") for relation, parent, _ in edges if relation == "composed_of")
    assert all(parent.startswith("spec/") for relation, parent, _ in edges if relation == "inspired_by")
    assert {run_id for *_, run_id in rows} == {result.run_id}
    assert all(code and reason for _, status, code, reason, _ in rows if status == "rejected")


def test_kernelbench_rows_become_mutation_seeds_when_present(warehouse: Warehouse) -> None:
    rows = [
        {
            "task_id": f"kb{i}",
            "name": f"kernelbench/L1/{i}_X",
            "origin": "kernelbench",
            "level": 1,
            "problem_id": i,
            "category": "level1",
            "source": "x = 1",
            "status": status,
            "reject_code": None,
            "reject_reason": None,
            "smoke_source": None,
            "smoke_constants": None,
            "output_shapes": None,
            "smoke_seconds": None,
        }
        for i, status in enumerate(["accepted", "rejected"])
    ]
    warehouse.insert("tasks", rows, "run-kb")
    assert [s.name for s in load_seeds(warehouse)] == ["kernelbench/L1/0_X"]
    assert load_seeds(warehouse, kernelbench=False) == []


def test_definitions_with_the_synthetic_asset_validate() -> None:
    defs = dg.Definitions(
        assets=[tasks.reference_tasks, tasks.kernelbench_tasks, synthetic.synthetic_tasks],
        asset_checks=[checks.synthetic_tasks_distinct],
        resources={"warehouse": WarehouseResource()},
    )
    dg.Definitions.validate_loadable(defs)
    node = defs.resolve_asset_graph().get(synthetic.synthetic_tasks.key)
    assert node.group_name == "tasks" and node.pools == {"duckdb"}
    assert {k.to_user_string() for k in node.parent_keys} == {"reference_tasks", "kernelbench_tasks"}
