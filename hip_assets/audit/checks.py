"""Checks of the verifier audit."""

import dagster as dg

from hip_assets.audit.assets import verifier_audit
from hipforge.store.audit import latest_deceptive
from resources.warehouse import WarehouseResource


@dg.asset_check(asset=verifier_audit, name="gate_rejects_every_deceptive_case", blocking=True, pool="duckdb")
def gate_rejects_deceptive(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """Fails when the latest audit saw the deterministic gate pass a deceptive kernel as correct."""
    run_id, slipped, deceptive = latest_deceptive(warehouse.get())
    return dg.AssetCheckResult(
        passed=run_id is not None and not slipped,
        metadata={"run_id": run_id if run_id is not None else "none", "deceptive_cases": deceptive,
                  "passed_by_gate": dg.MetadataValue.json({name: check for name, check in slipped})},
    )
