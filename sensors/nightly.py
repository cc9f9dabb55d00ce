"""Every night: re-verify the archive's best kernels on the current executor and toolchain (flagging verdicts
that changed), and re-run the KernelBench report of every model partition."""

import dagster as dg

from hip_assets.jobs import nightly_reevaluation_job
from hip_assets.reports.assets import archive_reverification, models_partitions
from resources.warehouse import WarehouseResource
from sensors.report_runs import report_requests


@dg.schedule(cron_schedule="0 3 * * *", execution_timezone="UTC", job=nightly_reevaluation_job,
             default_status=dg.DefaultScheduleStatus.RUNNING)
def nightly_reevaluation(context: dg.ScheduleEvaluationContext, warehouse: WarehouseResource) -> list[dg.RunRequest]:
    """One re-verification run and one report run per model; run keys carry the date, so a tick that is
    evaluated twice launches nothing twice."""
    night = context.scheduled_execution_time.strftime("%Y-%m-%d")
    models = context.instance.get_dynamic_partitions(models_partitions.name)
    requests = [dg.RunRequest(run_key=f"reverify-{night}", asset_selection=[archive_reverification.key],
                              tags={"hipforge/nightly": night})]
    return requests + report_requests(list(models), warehouse, f"report-{night}-", {"hipforge/nightly": night})
