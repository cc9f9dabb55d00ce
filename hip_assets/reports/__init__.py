"""KernelBench reports per model, and the nightly re-verification of the archive."""

import dagster as dg

from hip_assets.reports import assets

defs = dg.Definitions(assets=[assets.kernelbench_report, assets.archive_reverification])
