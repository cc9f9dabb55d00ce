"""Every night: re-verify the archive's best kernels on the current executor and toolchain (flagging verdicts
that changed), and re-run the KernelBench report of every model partition."""

import dagster as dg

from hip_assets.jobs import nightly_reevaluation_job
from hip_assets.report import archive_reverification, kernelbench_report, models_partitions


@dg.schedule(cron_schedule="0 3 * * *", execution_timezone="UTC", job=nightly_reevaluation_job,
             default_status=dg.DefaultScheduleStatus.RUNNING)
def nightly_reevaluation(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """One re-verification run and one report run per model; run keys carry the date, so a tick that is
    evaluated twice launches nothing twice."""
    night = context.scheduled_execution_time.strftime("%Y-%m-%d")
    models = context.instance.get_dynamic_partitions(models_partitions.name)
    requests = [dg.RunRequest(run_key=f"reverify-{night}", asset_selection=[archive_reverification.key],
                              tags={"hipforge/nightly": night})]
    requests += [dg.RunRequest(run_key=f"report-{night}-{model}", partition_key=model,
                               asset_selection=[kernelbench_report.key], tags={"hipforge/nightly": night})
                 for model in models]
    return requests
