"""The DuckDB warehouse: schema migrations, content-addressed rows, and every query on it. SQL lives only here
(tests/test_store_owns_sql.py): each table family has a module, and the rest of hipforge calls its functions."""

from hipforge.store.migrate import apply_migrations, schema_version
from hipforge.store.warehouse import Warehouse

__all__ = ["Warehouse", "apply_migrations", "schema_version"]
