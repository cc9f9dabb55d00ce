"""The real webserver and daemon after a demo-like materialization: the sensors tick and launch nothing for
work already done (a checkpoint whose report is materialized, inbox files already stored)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

from hipforge.bench.models import checkpoint_key
from hipforge.store import Warehouse
from hipforge.store.tasks import store_tasks
from hipforge.tasks.inbox import inbox_candidates
from hipforge.tasks.ingest import task_row
from tests import stored
from tests.test_task_model import GOOD
from tests.webserver import REPO_ROOT, dagster_webserver, graphql, instance_at, loaded_repository

SENSORS = {"new_checkpoints", "new_task_files"}
TICKS = """{ repositoriesOrError { ... on RepositoryConnection { nodes {
  sensors { name sensorState { ticks(limit: 10) { status skipReason } } } } } } }"""
RUNS = "{ runsOrError { ... on Runs { results { runId jobName } } } }"


def _demo_like(home: Path, db: Path, inbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `make demo` leaves: a trained checkpoint with its report materialized, the inbox's files stored."""
    stored.checkpoint(Warehouse(db), "ck-demo")
    inbox.mkdir()
    (inbox / "relu.py").write_text(GOOD)
    store_tasks(Warehouse(db), [task_row(c, None, None) for c in inbox_candidates(inbox, ["relu.py"])], [], "demo")
    home.mkdir()
    shutil.copy(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    with instance_at(home, monkeypatch) as instance:
        instance.add_dynamic_partitions("models", [checkpoint_key("ck-demo")])
        instance.report_runless_asset_event(dg.AssetMaterialization("kernelbench_report",
                                                                    partition=checkpoint_key("ck-demo")))


def _ticks(url: str) -> dict[str, list[dict]]:
    nodes = graphql(url, TICKS)["repositoriesOrError"]["nodes"]
    return {s["name"]: s["sensorState"]["ticks"] for node in nodes for s in node["sensors"] if s["name"] in SENSORS}


def test_the_sensors_tick_after_a_demo_and_launch_nothing_already_done(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    home, db, inbox = tmp_path / "home", tmp_path / "w.duckdb", tmp_path / "inbox"
    _demo_like(home, db, inbox, monkeypatch)
    env = {"HIPFORGE_WAREHOUSE": str(db), "HIPFORGE_INBOX": str(inbox)}
    with dagster_webserver(home, env, daemon=True) as url:
        loaded_repository(url, home)
        deadline = time.monotonic() + 240
        while not all(_ticks(url).values()) or len(_ticks(url)) < len(SENSORS):
            assert time.monotonic() < deadline, f"the sensors did not tick: {_ticks(url)}"
            time.sleep(2)
        ticks, runs = _ticks(url), graphql(url, RUNS)["runsOrError"]["results"]
    assert runs == [], runs
    assert all(t["status"] == "SKIPPED" for name in SENSORS for t in ticks[name]), ticks
    assert "no checkpoint without a report" in ticks["new_checkpoints"][0]["skipReason"]
    assert "no new task files" in ticks["new_task_files"][0]["skipReason"]
