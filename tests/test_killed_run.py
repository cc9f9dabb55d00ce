"""A materialization killed mid-run through the real webserver and daemon: run monitoring marks the run failed
and frees its `gpu` pool slot, the evaluations it finished stay stored under it, and the re-run reuses them (by
kernel, task and protocol) instead of judging them again, and succeeds."""

from __future__ import annotations

import contextlib
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import psutil
import pytest

from hip_assets.run_launcher import worker_pid
from hip_assets.tasks.assets import inbox_tasks
from hipforge.store import Warehouse
from resources.warehouse import WarehouseResource
from tests.corpus import ROOT as CORPUS
from tests.webserver import dagster_webserver, graphql, instance_at, loaded_repository

TASKS = ["relu", "gelu", "sigmoid", "tanh", "swish", "scale", "leaky_relu", "add"]
# the daemon notices a dead worker within its poll and frees the run's slots a second after the run ends
OVERRIDES = {"run_monitoring": {"poll_interval_seconds": 2, "free_slots_after_run_end_seconds": 1}}
LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
STATUS = 'query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }'


def _launch(url: str, home: Path) -> str:
    selector = {**loaded_repository(url, home), "jobName": "__ASSET_JOB",
                "assetSelection": [{"path": ["translated_kernels"]}]}
    config = {"ops": {"translated_kernels": {"config": {"origins": ["file"]}}}}
    launched = graphql(url, LAUNCH, {"params": {"selector": selector, "runConfigData": config, "mode": "default"}})
    assert launched["launchRun"]["__typename"] == "LaunchRunSuccess", launched
    return launched["launchRun"]["run"]["runId"]


def _status(url: str, run_id: str) -> str:
    return graphql(url, STATUS, {"id": run_id})["runOrError"]["status"]


def _until(what: str, ready: Callable[[], Any], timeout_s: float = 240) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := ready()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)
    return value


def _evaluations(db: Path, run_id: str | None = None) -> int:
    try:
        with Warehouse(db).connect(read_only=True) as con:
            sql = "SELECT count(*) FROM evaluations" + (" WHERE run_id = ?" if run_id else "")
            return con.execute(sql, [run_id] if run_id else []).fetchone()[0]
    except Exception:  # noqa: BLE001  # the run holds the file for a moment: ask again
        return 0


def test_a_killed_run_fails_frees_its_slot_and_its_rerun_reuses_what_it_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, db, inbox = tmp_path / "home", tmp_path / "w.duckdb", tmp_path / "inbox"
    inbox.mkdir()
    for name in TASKS:
        shutil.copy(CORPUS / "tasks" / f"{name}.py", inbox / f"{name}.py")
    dg.materialize([inbox_tasks], resources={"warehouse": WarehouseResource(path=str(db))},
                   run_config={"ops": {"inbox_tasks": {"config": {"folder": str(inbox)}}}})
    env = {"HIPFORGE_WAREHOUSE": str(db), "HIPFORGE_INBOX": str(tmp_path / "no-inbox")}
    with dagster_webserver(home, env, daemon=True, overrides=OVERRIDES) as url:
        killed = _launch(url, home)
        _until("two evaluations of the first run", lambda: _evaluations(db, killed) >= 2)
        with instance_at(home, monkeypatch) as instance:
            worker = psutil.Process(worker_pid(instance, killed))
        for proc in [worker, *worker.children(recursive=True)]:  # what the OOM killer would leave behind
            with contextlib.suppress(psutil.NoSuchProcess):  # a job that ended between the listing and now
                proc.send_signal(signal.SIGKILL)
        _until("the run to be marked failed", lambda: _status(url, killed) in ("FAILURE", "CANCELED"))
        assert _status(url, killed) == "FAILURE"
        stored = _evaluations(db, killed)

        def slots_free() -> bool:
            with instance_at(home, monkeypatch) as instance:
                return not instance.event_log_storage.get_concurrency_run_ids()

        _until("the killed run's pool slot to be freed", slots_free, 60)
        rerun = _launch(url, home)
        _until("the re-run to finish", lambda: _status(url, rerun) in ("SUCCESS", "FAILURE"), 300)
        assert _status(url, rerun) == "SUCCESS"
    with instance_at(home, monkeypatch) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("translated_kernels"))
    assert event.run_id == rerun
    assert event.asset_materialization.metadata["reused_evaluations"].value >= stored >= 2
    assert _evaluations(db, killed) == stored  # the killed run's rows stay, under its run
    assert _evaluations(db, rerun) + stored == _evaluations(db)  # nothing judged twice
