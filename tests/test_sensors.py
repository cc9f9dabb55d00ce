"""Sensors evaluated with Dagster's own test contexts: cursors, skip reasons, no duplicate runs."""

from __future__ import annotations

import json
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


def _tick(cursor: str | None) -> dg.SensorResult | dg.SkipReason:
    return new_task_files(dg.build_sensor_context(cursor=cursor))


def test_new_task_sensor_skips_when_nothing_is_new_and_names_what_it_ignores(inbox: Path) -> None:
    missing = _tick(None)
    assert isinstance(missing, dg.SkipReason) and "create it" in (missing.skip_message or "")
    inbox.mkdir()
    (inbox / "notes.txt").write_text("not a task")
    (inbox / ".hidden").write_text("")
    skipped = _tick(None)
    assert isinstance(skipped, dg.SkipReason)
    assert (skipped.skip_message or "").endswith("ignored (only *.py files are tasks): notes.txt")


def test_new_task_sensor_requests_one_run_per_new_batch(inbox: Path) -> None:
    inbox.mkdir()
    (inbox / "relu.py").write_text(GOOD)
    first = _tick(None)
    assert isinstance(first, dg.SensorResult) and len(first.run_requests) == 1
    config = first.run_requests[0].run_config["ops"]["inbox_tasks"]["config"]
    assert config["files"] == ["relu.py"]
    assert isinstance(_tick(first.cursor), dg.SkipReason)  # same files: no duplicate run

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
