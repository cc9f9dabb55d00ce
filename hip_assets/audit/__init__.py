"""The verifier audit: the gate and the judge against curated and injected attacks."""

import dagster as dg

from hip_assets.audit import assets, checks

defs = dg.Definitions(assets=[assets.verifier_audit], asset_checks=[checks.gate_rejects_deceptive])
