"""Make a step's wait for a pool slot visible. Dagster logs "Step blocked by limit for pool gpu" as a DEBUG engine
event (every 5 minutes), and the run stays STARTED with nothing running. This sensor launches nothing: every 30 s
it reads the pools' pending steps, and for one that has waited over 2 minutes it writes a WARNING on that run
(naming the pool and the runs and steps that hold its slots) and tags the run `hipforge/pool_wait`; when the wait
ends, an INFO line says how long it took. Steps of one run taking turns on a pool get the INFO line only."""

import json
import logging
import time

import dagster as dg

from hipforge.pool_waits import WARN_AFTER_S, Pending, ended_waits, long_waits

TAG = "hipforge/pool_wait"


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING)
def pool_waits(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Tells each run whose step has waited over 2 minutes for a `gpu` or `duckdb` slot; the cursor holds the
    waits already told (so each is told once, and its end once)."""
    told = json.loads(context.cursor) if context.cursor else {}
    reason, told = tell_pool_waits(context.instance, told, time.time())
    return dg.SensorResult(skip_reason=reason, cursor=json.dumps(told))


def tell_pool_waits(instance: dg.DagsterInstance, told: dict[str, float], now: float,
                    warn_after_s: float = WARN_AFTER_S) -> tuple[str, dict[str, float]]:
    """One pass: the waits over `warn_after_s` told to their runs, the ended ones too; returns the tick's
    summary and the waits told so far (key -> since)."""
    storage = instance.event_log_storage
    pending: list[Pending] = []
    limits: dict[str, int] = {}
    holders: dict[str, list[tuple[str, str]]] = {}
    for pool in sorted(storage.get_concurrency_keys()):
        info = storage.get_concurrency_info(pool)
        limits[pool] = info.slot_count
        holders[pool] = [(slot.run_id, slot.step_key) for slot in info.claimed_slots]
        pending += [Pending(pool, s.run_id, s.step_key, s.enqueued_timestamp.timestamp(),
                            s.assigned_timestamp.timestamp() if s.assigned_timestamp else None)
                    for s in info.pending_steps]
    waits = long_waits(pending, limits, holders, now, warn_after_s)
    ids = {w.run_id for w in waits} | {run for pool in holders.values() for run, _ in pool}
    runs = {r.run_id: r for r in instance.get_runs(dg.RunsFilter(run_ids=sorted(ids)))} if ids else {}
    status = {run_id: run.status.value for run_id, run in runs.items()}
    told = dict(told)
    for wait in waits:
        run = runs.get(wait.run_id)
        if wait.key in told or run is None or run.is_finished:
            continue
        level = logging.WARNING if wait.behind_other_runs else logging.INFO
        _log(instance, run, wait.step_key, level, wait.message(status))
        if wait.behind_other_runs:
            instance.add_run_tags(run.run_id, {TAG: wait.tag()})
        told[wait.key] = wait.since
    for key, message in ended_waits(told, pending, waits).items():
        run_id, step_key, pool = key.split("\t")
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            _log(instance, run, step_key, logging.INFO, message)
        if run is not None and run.tags.get(TAG, "").startswith(f"{pool}: {step_key} waiting"):
            instance.add_run_tags(run_id, {TAG: f"{pool}: {step_key} no longer waiting"})
        del told[key]
    if not waits:
        return f"no step has waited over {warn_after_s:.0f} s for a pool slot", told
    return "; ".join(f"run {w.run_id[:8]} step {w.step_key}: {w.waited_s / 60:.1f} min for '{w.pool}'"
                     for w in waits), told


def _log(instance: dg.DagsterInstance, run: dg.DagsterRun, step_key: str, level: int, message: str) -> None:
    """A plain log line on the run and step: the UI shows a WARNING as one (an engine event shows as EVENT)."""
    instance.handle_new_event(dg.EventLogEntry(
        user_message=message, level=level, job_name=run.job_name, run_id=run.run_id, error_info=None,
        timestamp=time.time(), step_key=step_key, dagster_event=None))
