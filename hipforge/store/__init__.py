"""The DuckDB warehouse: schema migrations, content-addressed rows, lineage queries."""

from hipforge.store.migrate import apply_migrations, schema_version
from hipforge.store.warehouse import Warehouse

__all__ = ["Warehouse", "apply_migrations", "schema_version"]
