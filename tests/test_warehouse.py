"""The DuckDB warehouse: migrations, transactional batches, content-addressed rows, lineage."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from hipforge.store import Warehouse, apply_migrations, schema_version
from hipforge.store.lineage import MAX_DEPTH, LineageNode, lineage, render_text
from hipforge.store.migrate import MIGRATIONS_DIR, MigrationError
from hipforge.store.tasks import store_tasks

CORE_TABLES = {"tasks", "kernels", "evaluations", "lineage_edges", "llm_calls"}


def _schema(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY ALL"
    ).fetchall()


def test_migrations_applied_twice_change_nothing(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    first = apply_migrations(con)
    schema = _schema(con)
    assert first and schema_version(con) == len(list(MIGRATIONS_DIR.glob("*.sql")))
    assert apply_migrations(con) == []
    assert _schema(con) == schema
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert CORE_TABLES <= tables
    for table in CORE_TABLES:  # every row carries the run that wrote it and when
        columns = {r[1] for r in schema if r[0] == table}
        assert {"run_id", "created_at"} <= columns, table


def test_edited_migration_is_refused(tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    (migrations / "0001_one.sql").write_text("CREATE TABLE a (x INTEGER);")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    assert apply_migrations(con, migrations) == ["0001_one"]
    (migrations / "0001_one.sql").write_text("CREATE TABLE a (x INTEGER, y INTEGER);")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        apply_migrations(con, migrations)


def test_failed_migration_leaves_nothing(tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    (migrations / "0001_bad.sql").write_text("CREATE TABLE b (x INTEGER); CREATE TABLE b (x INTEGER);")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    with pytest.raises(duckdb.Error):
        apply_migrations(con, migrations)
    assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'b'").fetchone()[0] == 0
    assert schema_version(con) == 0


def _task(task_id: str, name: str) -> dict[str, object]:
    return {"task_id": task_id, "name": name, "origin": "reference", "source": f"# {name}", "status": "accepted"}


def test_writer_dying_mid_batch_leaves_no_partial_batch(warehouse: Warehouse) -> None:
    warehouse.insert("tasks", [_task("aaaa0001", "kept")], run_id="run-1")
    with pytest.raises(RuntimeError, match="died"):
        with warehouse.transaction() as con:
            warehouse.insert("tasks", [_task("bbbb0001", "lost-1"), _task("bbbb0002", "lost-2")], "run-2", con=con)
            raise RuntimeError("writer died")
    with warehouse.connect(read_only=True) as con:
        assert con.execute("SELECT name, run_id FROM tasks").fetchall() == [("kept", "run-1")]


def test_insert_keeps_existing_rows_unless_replacing(warehouse: Warehouse) -> None:
    assert warehouse.insert("tasks", [_task("aaaa0001", "first")], "run-1") == 1
    assert warehouse.insert("tasks", [_task("aaaa0001", "second")], "run-2") == 0
    table, row = warehouse.find("aaaa")
    assert (table, row["name"], row["run_id"]) == ("tasks", "first", "run-1")
    first_seen = row["created_at"]
    warehouse.insert("tasks", [_task("aaaa0001", "third")], "run-3", on_conflict="replace")
    replaced = warehouse.find("aaaa0001")[1]
    assert replaced["name"] == "third"  # the content is the latest run's
    assert (replaced["run_id"], replaced["created_at"]) == ("run-1", first_seen)  # provenance the first's


def test_storing_tasks_again_keeps_first_seen_and_records_the_latest_run(warehouse: Warehouse) -> None:
    """A re-materialized task asset adds what is new; a task it saw again keeps its first run and time, so it never
    looks younger than the kernels translated from it, and names the re-run as the last that saw it."""
    def provenance() -> dict[str, tuple]:
        with warehouse.connect(read_only=True) as con:
            rows = con.execute("SELECT task_id, run_id, created_at, last_run_id, last_seen_at FROM tasks").fetchall()
        return {row[0]: row[1:] for row in rows}

    assert store_tasks(warehouse, [_task("aaaa0001", "relu")], [], "run-1") == (1, 0)
    [(run, created, last_run, last_seen)] = provenance().values()
    assert (run, last_run, last_seen) == ("run-1", "run-1", created)
    assert store_tasks(warehouse, [_task("aaaa0001", "relu"), _task("bbbb0001", "gelu")], [], "run-2") == (1, 0)
    again, new = provenance()["aaaa0001"], provenance()["bbbb0001"]
    assert again[:2] == (run, created) and again[2] == "run-2" and again[3] > last_seen
    assert (new[0], new[2]) == ("run-2", "run-2")


def test_find_reports_unknown_and_ambiguous_ids(warehouse: Warehouse) -> None:
    warehouse.insert("tasks", [_task("abcd0001", "x"), _task("abcd0002", "y")], "run-1")
    with pytest.raises(KeyError, match="ambiguous"):
        warehouse.find("abcd")
    with pytest.raises(KeyError, match="no task, kernel"):
        warehouse.find("ffff")


def test_lineage_walks_both_ways(warehouse: Warehouse) -> None:
    warehouse.insert("tasks", [_task("t-block", "block"), _task("t-linear", "linear"), _task("t-bias", "bias")], "r1")
    edges = [
        {"child_id": "t-block", "parent_id": "t-linear", "relation": "composed_of"},
        {"child_id": "t-linear", "parent_id": "t-bias", "relation": "composed_of"},
    ]
    warehouse.insert("lineage_edges", edges, "r1")
    up = lineage(warehouse, "t-block", "ancestors")
    assert [c.id for c in up.children] == ["t-linear"]
    assert [c.id for c in up.children[0].children] == ["t-bias"]
    down = lineage(warehouse, "t-bias", "descendants")
    assert down.children[0].children[0].id == "t-block"
    text = render_text(up, "ancestors")
    assert "composed_of → task t-linear" in text and "t-bias" in text


def test_lineage_survives_a_cycle(warehouse: Warehouse) -> None:
    edges = [
        {"child_id": "a", "parent_id": "b", "relation": "evolved_from"},
        {"child_id": "b", "parent_id": "a", "relation": "evolved_from"},
    ]
    warehouse.insert("lineage_edges", edges, "r1")
    up = lineage(warehouse, "a", "ancestors")
    assert [c.id for c in up.children] == ["b"]
    assert [(c.id, c.shown_above, c.children) for c in up.children[0].children] == [("a", True, [])]


def _chain(warehouse: Warehouse, pairs: list[tuple[str, str]]) -> None:
    warehouse.insert("lineage_edges", [{"child_id": c, "parent_id": p, "relation": "evolved_from"}
                                       for c, p in pairs], "r1")


def _ids(node: LineageNode) -> list[str]:
    return [node.id] + [i for c in node.children for i in _ids(c)]


def test_lineage_survives_a_cycle_that_misses_the_root(warehouse: Warehouse) -> None:
    """a -> b -> c -> b: evolution can produce it; b's subtree appears once and c's parent b is a reference."""
    _chain(warehouse, [("a", "b"), ("b", "c"), ("c", "b")])
    up = lineage(warehouse, "a", "ancestors")
    assert _ids(up) == ["a", "b", "c", "b"]
    again = up.children[0].children[0].children[0]
    assert again.shown_above and again.children == []
    assert "(shown above)" in render_text(up, "ancestors").splitlines()[-1]


def test_lineage_shows_a_diamond_once_per_node(warehouse: Warehouse) -> None:
    """Ten stacked diamonds: 2^10 paths to the bottom, but every node's subtree is expanded once."""
    pairs = []
    for level in range(10):
        top, bottom = f"n{level}", f"n{level + 1}"
        pairs += [(top, f"l{level}"), (top, f"r{level}"), (f"l{level}", bottom), (f"r{level}", bottom)]
    _chain(warehouse, pairs)
    ids = _ids(lineage(warehouse, "n0", "ancestors"))
    assert len(ids) < 60 and ids.count("n10") == 2  # once expanded, once a reference


def test_lineage_stops_at_its_depth_limit(warehouse: Warehouse) -> None:
    _chain(warehouse, [(f"k{i}", f"k{i + 1}") for i in range(MAX_DEPTH + 10)])
    node, depth = lineage(warehouse, "k0", "ancestors"), 0
    while node.children:
        node, depth = node.children[0], depth + 1
    assert depth == MAX_DEPTH


def test_records_and_checkpoints_stored_again_keep_their_first_run(warehouse: Warehouse) -> None:
    """A training asset re-materialized on the same data stores the same snapshot and checkpoint again: each keeps
    the run that first stored it, names the re-run as the last that saw it, and is the newest by that."""
    import time

    from hipforge.store.checkpoints import insert_checkpoint, latest_checkpoint
    from hipforge.store.records import insert_records, latest_snapshot

    def record(snapshot: str) -> dict:
        return {"record_id": "rec0001", "snapshot": snapshot, "kind": "sft", "task_id": "aaaa0001",
                "kernel_id": None, "prompt": [{"role": "user", "content": "t"}], "completion": None,
                "lessons": None, "export_path": f"exports/{snapshot}"}

    def checkpoint(cid: str) -> dict:
        return {"checkpoint_id": cid, "stage": "sft", "base_model": "tiny", "path": f"ckpt/{cid}",
                "data_snapshot": "snap-a", "hyperparameters": {"lr": 1e-3}, "metrics": None}

    insert_records(warehouse, [record("snap-a")], [], "run-1")
    insert_checkpoint(warehouse, checkpoint("ck-a"), [], "run-1")
    time.sleep(0.01)
    insert_records(warehouse, [record("snap-b")], [], "run-2")
    insert_checkpoint(warehouse, checkpoint("ck-b"), [], "run-2")
    assert latest_snapshot(warehouse, "sft")[0] == "snap-b"
    assert latest_checkpoint(warehouse, "sft")["checkpoint_id"] == "ck-b"
    time.sleep(0.01)
    insert_records(warehouse, [record("snap-a")], [], "run-3")  # the first data again
    insert_checkpoint(warehouse, checkpoint("ck-a"), [], "run-3")
    assert latest_snapshot(warehouse, "sft")[0] == "snap-a"
    again = latest_checkpoint(warehouse, "sft")
    assert (again["checkpoint_id"], again["run_id"], again["last_run_id"]) == ("ck-a", "run-1", "run-3")
    assert again["last_seen_at"] > again["created_at"]
    with warehouse.connect(read_only=True) as con:
        rows = con.execute("SELECT snapshot, run_id, last_run_id FROM records ORDER BY snapshot").fetchall()
    assert rows == [("snap-a", "run-1", "run-3"), ("snap-b", "run-2", "run-2")]


def test_reports_stored_before_0011_get_their_arch_and_size(tmp_path: Path) -> None:
    """Migration 0011 adds what each report row measured; older rows keep their numbers and gain arch and size."""
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql"))[:10]:
        (earlier / path.name).write_text(path.read_text())
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    apply_migrations(con, earlier)
    con.execute("INSERT INTO report_tasks (run_id, model, task_set, task_id, task_name, level, compiled, "
                "correct_strict, correct_loose, backend, arch) VALUES ('r', 'm', 'reference', 't', 'n', 1, true, "
                "true, true, 'cuda', 'sm_90')")
    con.execute("INSERT INTO report_levels (run_id, model, task_set, level, tolerance, tasks, compiled, correct, "
                "fast_0, fast_0_5, fast_0_8, fast_1, fast_1_2, fast_1_5, fast_2, backend) VALUES ('r', 'm', "
                "'reference', 1, 1e-4, 1, 1, 0.5, 1, 1, 1, 0, 0, 0, 0, 'cuda')")
    assert apply_migrations(con) == ["0011_report_measured"]
    assert con.execute("SELECT arch, protocol, size, correct FROM report_levels").fetchall() == [
        ("sm_90", None, "full", 0.5)]
    assert con.execute("SELECT size FROM report_tasks").fetchall() == [("full",)]
