"""Metadata that ties an asset's batch of rows to the Dagster run that wrote it."""

import dagster as dg

from hipforge.paths import webserver_url


def run_metadata(context: dg.AssetExecutionContext) -> dict[str, dg.MetadataValue]:
    return {
        "run_id": dg.MetadataValue.text(context.run.run_id),
        "run": dg.MetadataValue.url(f"{webserver_url()}/runs/{context.run.run_id}"),
    }
