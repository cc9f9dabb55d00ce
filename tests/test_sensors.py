"""Sensors evaluated with Dagster's own test contexts: cursors, skip reasons, no duplicate runs."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from sensors.new_tasks import new_task_files
from tests.test_task_model import GOOD


@pytest.fixture
def inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "inbox"
    monkeypatch.setenv("HIPFORGE_INBOX", str(folder))
    return folder


def _tick(cursor: str | None) -> dg.SensorResult | dg.SkipReason:
    return new_task_files(dg.build_sensor_context(cursor=cursor))


def test_new_task_sensor_skips_when_nothing_is_new(inbox: Path) -> None:
    assert isinstance(_tick(None), dg.SkipReason)  # folder missing
    inbox.mkdir()
    (inbox / "notes.txt").write_text("not a task")
    assert isinstance(_tick(None), dg.SkipReason)


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
