"""The nightly schedule and the new-checkpoint sensor, evaluated with Dagster's own test contexts:
run requests per model, cursors, skip reasons, no duplicate runs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import dagster as dg
import pytest

from hip_assets.definitions import defs
from hipforge.bench.models import OFFLINE, checkpoint_key
from hipforge.store import Warehouse
from resources.warehouse import WarehouseResource
from sensors.checkpoints import new_checkpoints
from sensors.nightly import nightly_reevaluation
from tests import stored


@pytest.fixture
def instance(tmp_path: Path):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as inst:
        yield inst


def _nightly(instance: dg.DagsterInstance, night: dt.datetime, db: Path) -> list[dg.RunRequest]:
    with dg.build_schedule_context(instance=instance, scheduled_execution_time=night,
                                   repository_def=defs.get_repository_def(),
                                   resources={"warehouse": WarehouseResource(path=str(db))}) as context:
        return list(nightly_reevaluation.evaluate_tick(context).run_requests or [])


def test_nightly_reverifies_then_reports_every_model(instance: dg.DagsterInstance, tmp_path: Path) -> None:
    night, db = dt.datetime(2026, 11, 29, 3, tzinfo=dt.UTC), tmp_path / "w.duckdb"
    assert [r.asset_selection[0].to_user_string() for r in _nightly(instance, night, db)] == ["archive_reverification"]
    instance.add_dynamic_partitions("models", [OFFLINE, checkpoint_key("ck1")])
    requests = _nightly(instance, night, db)
    reports = [r for r in requests if r.partition_key]
    assert sorted(r.partition_key for r in reports) == sorted([OFFLINE, checkpoint_key("ck1")])
    assert all(r.asset_selection[0].to_user_string() == "kernelbench_report" for r in reports)
    keys = {r.run_key for r in requests}
    assert len(keys) == 3 and keys == {r.run_key for r in _nightly(instance, night, db)}  # same night: same keys
    assert keys.isdisjoint(r.run_key for r in _nightly(instance, night + dt.timedelta(days=1), db))
    assert nightly_reevaluation.cron_schedule == "0 3 * * *"


def test_nightly_reports_the_most_meaningful_model_last(instance: dg.DagsterInstance, tmp_path: Path) -> None:
    """The asset page opens on the latest materialization: the embedded preset's zeros go first, the newest
    trained checkpoint last, queued behind the others at a lower priority."""
    store = Warehouse(tmp_path / "w.duckdb")
    stored.checkpoint(store, "tiny", hyperparameters={"preset": "embedded"})
    stored.checkpoint(store, "trained", hyperparameters={"preset": "seed"})
    models = [checkpoint_key("trained"), checkpoint_key("tiny"), OFFLINE]
    instance.add_dynamic_partitions("models", models)
    reports = [r for r in _nightly(instance, dt.datetime(2026, 11, 29, 3, tzinfo=dt.UTC), store.path)
               if r.partition_key]
    assert [r.partition_key for r in reports] == [checkpoint_key("tiny"), OFFLINE, checkpoint_key("trained")]
    assert [r.tags.get("dagster/priority") for r in reports] == [None, None, "-1"]


def _tick(instance: dg.DagsterInstance, db: Path, cursor: str | None) -> dg.SensorResult | dg.SkipReason:
    context = dg.build_sensor_context(instance=instance, cursor=cursor,
                                      resources={"warehouse": WarehouseResource(path=str(db))})
    return new_checkpoints(context)


def _checkpoint(store: Warehouse, checkpoint_id: str) -> None:
    stored.checkpoint(store, checkpoint_id, path=f"/ckpt/{checkpoint_id}", base_model="tiny")


def test_checkpoint_sensor_reports_each_new_checkpoint_once(instance: dg.DagsterInstance, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    skipped = _tick(instance, db, None)
    assert isinstance(skipped, dg.SkipReason) and "no warehouse" in skipped.skip_message
    store = Warehouse(db)
    with store.connect() as con:  # a warehouse from before training existed: no checkpoints table
        con.execute("DROP TABLE checkpoints")
    skipped = _tick(instance, db, None)
    assert isinstance(skipped, dg.SkipReason) and "no checkpoints table" in skipped.skip_message

    store = Warehouse(tmp_path / "w2.duckdb")
    db = store.path
    _checkpoint(store, "ck1")
    first = _tick(instance, db, None)
    assert isinstance(first, dg.SensorResult)
    assert [r.partition_key for r in first.run_requests] == [checkpoint_key("ck1")]
    assert first.dynamic_partitions_requests[0].partition_keys == [checkpoint_key("ck1")]
    assert json.loads(first.cursor) == ["ck1"]
    again = _tick(instance, db, first.cursor)
    assert isinstance(again, dg.SensorResult) and not again.run_requests  # no duplicate run
    assert again.skip_reason and "1 in the warehouse" in again.skip_reason.skip_message

    instance.add_dynamic_partitions("models", [checkpoint_key("ck1")])
    _checkpoint(store, "ck2")
    second = _tick(instance, db, first.cursor)
    assert [r.partition_key for r in second.run_requests] == [checkpoint_key("ck2")]
    assert second.run_requests[0].run_key != first.run_requests[0].run_key
    assert second.dynamic_partitions_requests[0].partition_keys == [checkpoint_key("ck2")]
    # a lost cursor re-requests ck1 under the same run key (Dagster drops the duplicate) and adds no partition twice
    replay = _tick(instance, db, None)
    assert {r.run_key for r in replay.run_requests} == {first.run_requests[0].run_key, second.run_requests[0].run_key}
    assert replay.dynamic_partitions_requests[0].partition_keys == [checkpoint_key("ck2")]
