"""A plot as metadata, the one way every asset attaches one: the PNG written to a file whose path the
materialization carries, and the same image as markdown.

Dagster 1.13's UI shows markdown metadata inline only under 1,000 characters; a base64 PNG is far longer, so it sits
behind "[Show Markdown]", whose dialog renders it (its sanitizer allows data: image sources). A path entry is shown
as text with a copy button, and a file:// url would not help: browsers refuse to open file:// links from an http
page. So both stay: the dialog to look at the plot in the UI, the file to open, keep or send."""

from pathlib import Path

import dagster as dg

from hipforge.plots import markdown_image, plots_root, run_plot_folder, save_png
from hipforge.store import Warehouse


def plot_metadata(context: dg.AssetExecutionContext, warehouse: Warehouse, key: str, png: bytes | None, alt: str,
                  folder: Path | None = None) -> dict[str, dg.MetadataValue]:
    """{key: the image as markdown, key_file: the PNG's path}, or nothing when there is no plot. The file goes to
    `folder`, or plots/<asset>/<partition>/<run id>/<key>.png beside the warehouse (the newest runs kept)."""
    if not png:
        return {}
    if folder is None:
        partition = context.partition_key if context.has_partition_key else None
        folder = run_plot_folder(plots_root(warehouse.path), context.asset_key.to_user_string(), partition,
                                 context.run.run_id)
    path = save_png(png, folder, key)
    return {key: dg.MetadataValue.md(markdown_image(png, alt)), f"{key}_file": dg.MetadataValue.path(str(path))}
