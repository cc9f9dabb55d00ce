"""The DuckDB warehouse as a Dagster resource."""

import dagster as dg
from pydantic import Field

from hipforge.paths import default_warehouse_path
from hipforge.store import Warehouse


class WarehouseResource(dg.ConfigurableResource):
    """DuckDB file holding tasks, kernels, evaluations, lineage and LLM calls (schema migrated on connect)."""

    path: str = Field(
        default_factory=lambda: str(default_warehouse_path()),
        description="DuckDB file; set HIPFORGE_WAREHOUSE to share one across machines.",
    )

    def get(self) -> Warehouse:
        return Warehouse(self.path)
