"""A step waiting for a pool slot is told about (issue 22, item 2): Dagster itself logs "Step blocked by limit for
pool gpu" at DEBUG only, so the pool_waits sensor writes a WARNING on the waiting run, naming the pool and the run
that holds its slot, tags the run, and says when the wait ended."""

import logging
import threading
import time
from pathlib import Path

import dagster as dg
import yaml
from dagster._core.storage.dagster_run import DagsterRunStatus
from dagster._core.test_utils import create_run_for_test

from hipforge.pool_waits import Pending, ended_waits, long_waits, wait_key
from sensors.pool_waits import TAG, pool_waits, tell_pool_waits

ROOT = Path(__file__).resolve().parents[1]


def test_long_waits_name_the_pool_the_holders_and_whether_another_run_holds_it() -> None:
    pending = [Pending("gpu", "run-b", "translated_kernels", since=100.0),
               Pending("gpu", "run-b", "verifier_audit", since=250.0),  # too recent
               Pending("duckdb", "run-c", "lessons", since=0.0, assigned=50.0)]  # has its slot
    holders = {"gpu": [("run-a-12345678", "rl_checkpoint")], "duckdb": [("run-c", "lessons")]}
    (wait,) = long_waits(pending, {"gpu": 1, "duckdb": 1}, holders, now=300.0, warn_after_s=120)
    assert (wait.pool, wait.step_key, wait.waited_s, wait.behind_other_runs) == ("gpu", "translated_kernels", 200, True)
    message = wait.message({"run-a-12345678": "FAILURE"})
    assert "waited 3.3 min for a slot of pool 'gpu' (limit 1), held by run run-a-12 (FAILURE) step rl_checkpoint" \
        in message and "Deployment > Concurrency > gpu" in message
    assert wait.tag() == "gpu: translated_kernels waiting behind run run-a-12"
    # steps of one run taking turns on a pool: told, but not as a run stuck behind another
    (turn,) = long_waits([Pending("gpu", "run-a", "x", 0.0)], {"gpu": 1}, {"gpu": [("run-a", "y")]}, now=500.0)
    assert not turn.behind_other_runs and "held by this run step y" in turn.message()
    told = [wait_key("run-c", "lessons", "duckdb"), wait_key("run-d", "gone", "gpu")]
    assert ended_waits(told, pending, [wait]) == {
        told[0]: "Step lessons got a slot of pool 'duckdb' after waiting 50 s.",
        told[1]: "Step gone no longer waits for a slot of pool 'gpu'."}


def test_a_step_waiting_behind_another_runs_slot_is_a_warning_on_its_run() -> None:
    """A real run's step blocked on `gpu` (held by another run, as a killed run's was) gets a WARNING naming the
    pool and the holder, and a run tag; when it gets the slot, an INFO line says after how long."""
    concurrency = yaml.safe_load((ROOT / "dagster.yaml").read_text())["concurrency"]
    started, release = threading.Event(), threading.Event()

    @dg.asset(pool="gpu")
    def on_the_gpu() -> None:
        started.set()
        release.wait(60)

    with dg.instance_for_test(overrides={"concurrency": concurrency}) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("gpu", 1)
        holder = create_run_for_test(instance, job_name="translated_kernels", status=DagsterRunStatus.STARTED)
        assert storage.claim_concurrency_slot("gpu", holder.run_id, "translated_kernels").is_claimed
        worker = threading.Thread(target=dg.materialize, args=([on_the_gpu],), kwargs={"instance": instance})
        worker.start()
        try:
            waiting = _waiting_step(instance)
            assert tell_pool_waits(instance, {}, time.time(), warn_after_s=120)[0].startswith("no step has waited")
            reason, told = tell_pool_waits(instance, {}, time.time(), warn_after_s=0)
            again, told = tell_pool_waits(instance, told, time.time(), warn_after_s=0)  # told once only
            run = instance.get_run_by_id(waiting.run_id)
            warnings = [e for e in instance.all_logs(run.run_id) if e.level == logging.WARNING]
            assert run.status == DagsterRunStatus.STARTED and len(warnings) == 1, warnings
            assert warnings[0].step_key == "on_the_gpu" and f"run {holder.run_id[:8]} (STARTED)" in \
                warnings[0].user_message and "slot of pool 'gpu'" in warnings[0].user_message
            assert run.tags[TAG] == f"gpu: on_the_gpu waiting behind run {holder.run_id[:8]}"
            assert reason == again and f"run {run.run_id[:8]} step on_the_gpu" in reason

            storage.free_concurrency_slots_for_run(holder.run_id)  # as run monitoring does for a dead run
            assert started.wait(60), "the step never got the freed slot"
            _, told = tell_pool_waits(instance, told, time.time(), warn_after_s=0)
            infos = [e.user_message for e in instance.all_logs(run.run_id) if e.level == logging.INFO]
            assert told == {} and any("got a slot of pool 'gpu' after waiting" in m for m in infos), infos
            assert instance.get_run_by_id(run.run_id).tags[TAG] == "gpu: on_the_gpu no longer waiting"
        finally:
            release.set()
            worker.join(60)
        assert instance.get_run_by_id(waiting.run_id).status == DagsterRunStatus.SUCCESS

        # the sensor itself: nothing waits now; it says so and keeps its cursor
        result = pool_waits(dg.build_sensor_context(instance=instance))
        assert "no step has waited" in result.skip_reason.skip_message and result.cursor == "{}"


def _waiting_step(instance: dg.DagsterInstance, timeout_s: float = 60.0):  # noqa: ANN202 (PendingStepInfo)
    """The materialization's step once it asked for a `gpu` slot and got none."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        steps = [s for s in instance.event_log_storage.get_concurrency_info("gpu").pending_steps
                 if s.assigned_timestamp is None]
        if steps:
            time.sleep(1.1)  # the pool's timestamps have whole seconds: let the wait be longer than 0 s
            return steps[0]
        time.sleep(0.2)
    raise AssertionError("no step waited for the gpu slot")
