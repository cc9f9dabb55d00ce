"""Kernels: translation, evolution and the verified archive."""

import dagster as dg

from hip_assets.kernels import assets, checks

defs = dg.Definitions(
    assets=[assets.translated_kernels, assets.evolved_kernels, assets.kernel_archive],
    asset_checks=[checks.archive_best_kernels_are_verified],
)
