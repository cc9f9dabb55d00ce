"""Metadata every asset shares: the Dagster run that wrote its batch of rows, and rows as a table."""

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import dagster as dg

from hipforge.paths import webserver_url


def run_metadata(context: dg.AssetExecutionContext) -> dict[str, dg.MetadataValue]:
    return {
        "run_id": dg.MetadataValue.text(context.run.run_id),
        "run": dg.MetadataValue.url(f"{webserver_url()}/runs/{context.run.run_id}"),
    }


def partition_link(asset: str, partition: str) -> dg.MetadataValue:
    """The asset's page opened on one partition: the Overview it opens on by default shows the latest
    materialization of any partition, and Dagster has no setting for another (report_store.opening_order)."""
    return dg.MetadataValue.url(f"{webserver_url()}/assets/{asset}?view=partitions&partition="
                                f"{quote(partition, safe='')}")


def table(rows: Sequence[Mapping[str, Any]], empty: str | None = None) -> dg.MetadataValue:
    """Rows of one shape as Dagster table metadata (sortable in the UI), columns typed by their first value;
    with no rows, the `empty` text where one is given (a table with no columns says nothing)."""
    if not rows and empty is not None:
        return dg.MetadataValue.text(empty)
    kinds = {bool: "bool", int: "int", float: "float"}

    def kind(name: str) -> str:
        return next((kinds.get(type(r[name]), "string") for r in rows if r[name] is not None), "string")

    columns = [dg.TableColumn(name, kind(name)) for name in (rows[0] if rows else {})]
    return dg.MetadataValue.table([dg.TableRecord(dict(r)) for r in rows], schema=dg.TableSchema(columns))
