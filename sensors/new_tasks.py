"""Ingest task files as soon as they are dropped into the inbox folder."""

import json
from pathlib import Path

import dagster as dg

from hip_assets.jobs import inbox_job
from hipforge.paths import default_inbox
from hipforge.store.tasks import stored_sources
from hipforge.tasks.inbox import already_stored, ignored_files, new_files, scan_inbox
from resources.warehouse import WarehouseResource


@dg.sensor(job=inbox_job, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING)
def new_task_files(context: dg.SensorEvaluationContext,
                   warehouse: WarehouseResource) -> dg.SensorResult | dg.SkipReason:
    """One run per batch of new or changed *.py files; the cursor remembers each file's content hash. With no
    cursor yet, files whose content is already stored (a demo's, or a run by hand) count as seen."""
    folder = default_inbox()
    if not folder.is_dir():
        return dg.SkipReason(f"no inbox folder {folder}: create it (or set HIPFORGE_INBOX) and drop task files in")
    current = scan_inbox(folder)
    if context.cursor:
        seen = json.loads(context.cursor)
    else:  # the first tick: what the warehouse already holds is not new
        seen = already_stored(current, stored_sources(warehouse.get(), "file"))
    fresh = new_files(current, seen)
    if not fresh:
        ignored = ignored_files(folder)  # named in the skip reason each tick shows, not logged every 30 s
        note = f"; ignored (only *.py files are tasks): {', '.join(ignored[:5])}" if ignored else ""
        return dg.SensorResult(skip_reason=f"no new task files in {folder}{note}", cursor=json.dumps(seen))
    batch_key = "-".join(current[name] for name in fresh)
    config = {"folder": str(Path(folder)), "files": fresh}
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"inbox-{batch_key}",
                                    run_config={"ops": {"inbox_tasks": {"config": config}}})],
        cursor=json.dumps({**seen, **{name: current[name] for name in fresh}}),
    )
