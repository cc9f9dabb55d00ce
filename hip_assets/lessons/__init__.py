"""The summarizer's lessons from failed kernels."""

import dagster as dg

from hip_assets.lessons import assets

defs = dg.Definitions(assets=[assets.lessons])
