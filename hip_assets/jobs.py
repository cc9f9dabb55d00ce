"""The named jobs of the demo and of the automations, so that their runs say what they are in the UI's run list
(not __ASSET_JOB)."""

import dagster as dg

demo_job = dg.define_asset_job(
    "demo",
    selection=dg.AssetSelection.all() - dg.AssetSelection.assets("kernelbench_report", "archive_reverification"),
    description="The whole pipeline on the embedded default, from tasks to trained checkpoints (`make demo`; the "
                "reports of its models follow, one run per model partition).")
nightly_reevaluation_job = dg.define_asset_job(
    "nightly_reevaluation", selection=["archive_reverification", "kernelbench_report"],
    description="The archive's best kernels verified again, and every model's KernelBench report run again.")
checkpoint_reports_job = dg.define_asset_job(
    "checkpoint_reports", selection=["kernelbench_report"],
    description="The KernelBench report of one model partition: a newly trained checkpoint (the new_checkpoints "
                "sensor), or any model the demo reports.")
inbox_job = dg.define_asset_job(
    "inbox", selection=["inbox_tasks"], description="Task files dropped into the inbox folder, checked and stored.")
