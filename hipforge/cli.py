"""The `hipforge` command: run the demo pipeline, inspect rows and walk lineage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hipforge.cli_inputs import fail, found, stored_warehouse
from hipforge.paths import REPO_ROOT, default_warehouse_path, webserver_url
from hipforge.store import Warehouse
from hipforge.store.lineage import chained_node, lineage, render_text, to_json
from hipforge.store.tasks import status_counts, task_listing
from hipforge.store.warehouse import FINDABLE

app = typer.Typer(help="hipforge: teach language models to write fast HIP kernels.", no_args_is_help=True)
console = Console(width=None if sys.stdout.isatty() else 120)
KERNELBENCH_HINT = ("; none loaded yet: set HIPFORGE_KERNELBENCH (a KernelBench folder, .jsonl or dataset id) "
                    "and materialize the kernelbench_tasks asset (make ui)")
WarehouseOpt = Annotated[Path | None, typer.Option(help="DuckDB file (default: HIPFORGE_WAREHOUSE or warehouse/)")]


@app.command()
def demo() -> None:
    """Run the pipeline's `demo` job on the embedded default (no network, no GPU) with the real Dagster CLI, then
    the report of each of its models."""
    env = {**os.environ, "DAGSTER_HOME": os.environ.get("DAGSTER_HOME", str(REPO_ROOT))}
    command = [sys.executable, "-m", "dagster", "job", "execute", "-j", "demo", "-m", "hip_assets.definitions"]
    console.print(f"[bold]running the demo job[/bold] with DAGSTER_HOME={env['DAGSTER_HOME']}")
    if subprocess.run(command, env=env, cwd=REPO_ROOT).returncode != 0:
        fail("materialization failed; the Dagster log above names the step")
    cli_report.demo_reports(env, console)
    warehouse = Warehouse(default_warehouse_path())
    counts, chain = status_counts(warehouse), chained_node(warehouse)
    table = Table("origin", "status", "tasks", title=f"warehouse {warehouse.path}")
    for origin, status, n in counts:
        table.add_row(origin, status, str(n))
    console.print(table)
    console.print("\n[bold]Where to look next[/bold]")
    console.print("  make ui                      Dagster UI at http://127.0.0.1:3000 (asset graph, runs, checks)")
    console.print("  .venv/bin/hipforge tasks     every stored task, accepted or rejected with the reason")
    console.print("  .venv/bin/hipforge report    KernelBench scores per model and level beside the seed's")
    if chain:
        console.print(f"  .venv/bin/hipforge lineage {chain}   a real lineage chain")
        console.print(f"  .venv/bin/hipforge show {chain}      one row, with its Dagster run")


@app.command("lineage")
def lineage_cmd(
    node_id: Annotated[str, typer.Argument(help="task, kernel, evaluation, record or checkpoint id (a unique "
                                                "prefix will do)")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of text")] = False,
    warehouse: WarehouseOpt = None,
) -> None:
    """Ancestors and descendants of any task, kernel, evaluation, record or checkpoint."""
    store, table, row = found(warehouse, node_id)
    full_id = row[FINDABLE[table]]
    up, down = lineage(store, full_id, "ancestors"), lineage(store, full_id, "descendants")
    if as_json:
        print(json.dumps({"id": full_id, "kind": up.kind, "label": up.label,
                          "ancestors": to_json(up)["children"], "descendants": to_json(down)["children"]}, indent=2))
        return
    console.print(f"[bold]{up.kind} {full_id}[/bold]  {up.label}  [dim]run {up.run_id}[/dim]", highlight=False)
    console.print(render_text(up, "ancestors"), highlight=False, markup=False)
    console.print(render_text(down, "descendants"), highlight=False, markup=False)


@app.command()
def show(
    node_id: Annotated[str, typer.Argument(help="task, kernel, evaluation, LLM call, record or checkpoint id "
                                                "(a unique prefix will do)")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
    warehouse: WarehouseOpt = None,
) -> None:
    """One stored row, in full."""
    _, table, row = found(warehouse, node_id)
    if as_json:
        print(json.dumps({"table": table, **row}, indent=2, default=str))
        return
    console.print(f"[bold]{table}[/bold]")
    for key, value in row.items():
        text = str(value)
        console.print(f"{key}:" + (f"\n{text}" if "\n" in text else f" {text}"), highlight=False, markup=False)
    if row.get("run_id"):  # the run that wrote the row, in the Dagster UI
        console.print(f"run: {webserver_url()}/runs/{row['run_id']}", highlight=False, markup=False)


@app.command()
def tasks(
    origin: Annotated[str | None, typer.Option(help="reference, kernelbench, synthetic ...")] = None,
    status: Annotated[str | None, typer.Option(help="accepted or rejected")] = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """List stored tasks with their status and, for rejected ones, the reason."""
    rows, origins = task_listing(stored_warehouse(warehouse), origin, status)
    if not rows and origin and origin not in origins:  # say why nothing matched
        console.print(f"no tasks of origin {origin!r}: the warehouse holds {', '.join(origins) or 'none'}"
                      + (KERNELBENCH_HINT if origin == "kernelbench" else ""), highlight=False, markup=False)
        return
    table = Table(title=f"{len(rows)} task{'' if len(rows) == 1 else 's'}")
    # text wraps at words and folds only a word longer than its column; an id is never cut (show takes it)
    for column in ("task_id", "name", "origin", "status", "reason"):
        table.add_column(column, no_wrap=column == "task_id", overflow="fold")
    for row in rows:  # Text: a reason's "[line 12: ...]" is part of it, not console markup
        table.add_row(*[Text(str(v)) for v in row])
    console.print(table)


from hipforge import cli_kernels, cli_report  # noqa: E402  # register `eval`, `translate`, `report`

cli_kernels.register(app, console)
cli_report.register(app, console)
