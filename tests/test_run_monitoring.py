"""Run monitoring with our launcher: a run whose worker process died is marked failed by Dagster's own
monitoring pass, and the concurrency pass then frees the pool slots it held."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import yaml
from dagster._core.storage.dagster_run import DagsterRunStatus
from dagster._core.test_utils import create_run_for_test
from dagster._daemon.monitoring.concurrency import execute_concurrency_slots_iteration
from dagster._daemon.monitoring.run_monitoring import monitor_started_run

from hip_assets.run_launcher import LocalRunLauncher

ROOT = Path(__file__).resolve().parents[1]


class _Workspace:  # what the concurrency pass asks of its workspace context
    def __init__(self, instance: dg.DagsterInstance) -> None:
        self.instance = instance


def test_a_run_whose_worker_was_killed_is_failed_and_its_pool_slot_freed() -> None:
    config = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    overrides = {"run_launcher": config["run_launcher"],
                 "run_monitoring": {**config["run_monitoring"], "free_slots_after_run_end_seconds": 1},
                 "concurrency": config["concurrency"]}
    with dg.instance_for_test(overrides=overrides) as instance:
        assert isinstance(instance.run_launcher, LocalRunLauncher)
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        run = create_run_for_test(instance, job_name="translated_kernels", status=DagsterRunStatus.STARTED)
        instance.report_engine_event(f"Started process for run (pid: {worker.pid}).", run)
        instance.event_log_storage.claim_concurrency_slot("gpu", run.run_id, "translated_kernels")
        log = logging.getLogger("test")

        monitor_started_run(instance, None, instance.get_run_record_by_id(run.run_id), log)
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED  # alive: left alone

        worker.kill()
        worker.wait()
        monitor_started_run(instance, None, instance.get_run_record_by_id(run.run_id), log)
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE
        assert instance.event_log_storage.get_concurrency_run_ids() == {run.run_id}
        time.sleep(2.2)
        list(execute_concurrency_slots_iteration(_Workspace(instance), log))
        assert not instance.event_log_storage.get_concurrency_run_ids()  # the slot is back
