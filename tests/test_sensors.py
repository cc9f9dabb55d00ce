"""Sensors evaluated with Dagster's own test contexts: cursors, skip reasons, no duplicate runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest

from sensors.new_tasks import new_task_files
from tests import stored
from tests.test_task_model import GOOD


@pytest.fixture
def inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "inbox"
    monkeypatch.setenv("HIPFORGE_INBOX", str(folder))
    return folder


def _tick(cursor: str | None, warehouse: Path | None = None) -> dg.SensorResult | dg.SkipReason:
    from resources.warehouse import WarehouseResource

    path = warehouse or Path(os.environ["HIPFORGE_INBOX"]).parent / "none.duckdb"
    return new_task_files(dg.build_sensor_context(cursor=cursor,
                                                  resources={"warehouse": WarehouseResource(path=str(path))}))


def _skip_message(result: dg.SensorResult | dg.SkipReason) -> str | None:
    """Why the tick launched nothing; None when it requested runs."""
    if isinstance(result, dg.SkipReason):
        return result.skip_message or ""
    return None if result.run_requests else (result.skip_reason.skip_message or "")


def test_new_task_sensor_skips_when_nothing_is_new_and_names_what_it_ignores(inbox: Path) -> None:
    assert "create it" in (_skip_message(_tick(None)) or "")
    inbox.mkdir()
    (inbox / "notes.txt").write_text("not a task")
    (inbox / ".hidden").write_text("")
    assert (_skip_message(_tick(None)) or "").endswith("ignored (only *.py files are tasks): notes.txt")


def test_the_first_tick_counts_files_already_stored_as_seen(inbox: Path, tmp_path: Path) -> None:
    """After a demo or a run by hand stored the inbox's files, the sensor's first tick (no cursor yet) launches
    nothing for them; a file whose content differs from what is stored is new."""
    from hipforge.store import Warehouse
    from hipforge.store.tasks import store_tasks
    from hipforge.tasks.inbox import inbox_candidates
    from hipforge.tasks.ingest import task_row

    inbox.mkdir()
    (inbox / "relu.py").write_text(GOOD)
    (inbox / "gelu.py").write_text(GOOD.replace("relu", "gelu"))
    db = tmp_path / "w.duckdb"
    store_tasks(Warehouse(db), [task_row(c, None, None) for c in inbox_candidates(inbox, ["relu.py", "gelu.py"])],
                [], "demo-run")
    first = _tick(None, db)
    assert _skip_message(first) is not None and set(json.loads(first.cursor)) == {"relu.py", "gelu.py"}
    (inbox / "gelu.py").write_text(GOOD.replace("relu", "sigmoid"))
    assert _tick(None, db).run_requests[0].run_config["ops"]["inbox_tasks"]["config"]["files"] == ["gelu.py"]


def test_new_task_sensor_requests_one_run_per_new_batch(inbox: Path) -> None:
    inbox.mkdir()
    (inbox / "relu.py").write_text(GOOD)
    first = _tick(None)
    assert isinstance(first, dg.SensorResult) and len(first.run_requests) == 1
    config = first.run_requests[0].run_config["ops"]["inbox_tasks"]["config"]
    assert config["files"] == ["relu.py"]
    assert _skip_message(_tick(first.cursor)) is not None  # same files: no duplicate run

    (inbox / "gelu.py").write_text(GOOD.replace("relu", "gelu"))
    (inbox / "relu.py").write_text(GOOD.replace("relu", "sigmoid"))  # changed content counts as new
    second = _tick(first.cursor)
    files = second.run_requests[0].run_config["ops"]["inbox_tasks"]["config"]["files"]
    assert sorted(files) == ["gelu.py", "relu.py"]
    assert second.run_requests[0].run_key != first.run_requests[0].run_key
    assert set(json.loads(second.cursor)) == {"gelu.py", "relu.py"}


def test_the_checkpoint_sensor_never_redoes_a_report_already_materialized(tmp_path: Path) -> None:
    from hipforge.bench.models import checkpoint_key
    from hipforge.store import Warehouse
    from resources.warehouse import WarehouseResource
    from sensors.checkpoints import kernelbench_report, new_checkpoints

    path = tmp_path / "w.duckdb"
    for cid in ("ck-demo", "ck-new"):
        stored.checkpoint(Warehouse(str(path)), cid)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", [checkpoint_key("ck-demo")])
        instance.report_runless_asset_event(dg.AssetMaterialization(kernelbench_report.key,
                                                                    partition=checkpoint_key("ck-demo")))

        def tick(cursor: str | None) -> dg.SensorResult:
            context = dg.build_sensor_context(instance=instance, cursor=cursor,
                                              resources={"warehouse": WarehouseResource(path=str(path))})
            result = new_checkpoints(context)
            assert isinstance(result, dg.SensorResult)
            return result

        first = tick(None)  # a first tick after the demo: only the checkpoint without a report
        assert [r.partition_key for r in first.run_requests] == [checkpoint_key("ck-new")]
        assert set(json.loads(first.cursor)) == {"ck-demo", "ck-new"}
        again = tick(first.cursor)
        assert not again.run_requests and again.skip_reason
