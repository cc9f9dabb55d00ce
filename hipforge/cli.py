"""The `hipforge` command: run the demo pipeline, inspect rows and walk lineage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hipforge.paths import REPO_ROOT, default_warehouse_path
from hipforge.store import Warehouse
from hipforge.store.lineage import chained_node, lineage, render_text, to_json
from hipforge.store.tasks import status_counts, task_listing
from hipforge.store.warehouse import FINDABLE

app = typer.Typer(help="hipforge: teach language models to write fast HIP kernels.", no_args_is_help=True)
console = Console(width=None if sys.stdout.isatty() else 120)
WarehouseOpt = Annotated[Path | None, typer.Option(help="DuckDB file (default: HIPFORGE_WAREHOUSE or warehouse/)")]


def _warehouse(path: Path | None) -> Warehouse:
    return Warehouse(path or default_warehouse_path())


def _reason(err: Exception) -> str:
    """An exception's own message (a KeyError's str() wraps it in quotes)."""
    return str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)


def _fail(message: str) -> NoReturn:
    # one line, not wrapped: paths stay copyable
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(1)


@app.command()
def demo(
    select: Annotated[str, typer.Option(help="Dagster asset selection (the per-model reports follow it)")] = (
        "not key:kernelbench_report and not key:archive_reverification"),
) -> None:
    """Materialize the pipeline on the embedded default (no network, no GPU) with the real Dagster CLI."""
    env = {**os.environ, "DAGSTER_HOME": os.environ.get("DAGSTER_HOME", str(REPO_ROOT))}
    command = [sys.executable, "-m", "dagster", "asset", "materialize", "--select", select,
               "-m", "hip_assets.definitions"]
    console.print(f"[bold]materializing[/bold] {select!r} with DAGSTER_HOME={env['DAGSTER_HOME']}")
    if subprocess.run(command, env=env, cwd=REPO_ROOT).returncode != 0:
        _fail("materialization failed; the Dagster log above names the step")
    cli_report.demo_reports(env, console, _fail)
    warehouse = _warehouse(None)
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
    store = _warehouse(warehouse)
    try:
        table, row = store.find(node_id)
    except (KeyError, FileNotFoundError) as err:
        _fail(_reason(err))
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
    try:
        table, row = _warehouse(warehouse).find(node_id)
    except (KeyError, FileNotFoundError) as err:
        _fail(_reason(err))
    if as_json:
        print(json.dumps({"table": table, **row}, indent=2, default=str))
        return
    console.print(f"[bold]{table}[/bold]")
    for key, value in row.items():
        text = str(value)
        console.print(f"{key}:" + (f"\n{text}" if "\n" in text else f" {text}"), highlight=False, markup=False)


@app.command()
def tasks(
    origin: Annotated[str | None, typer.Option(help="reference, kernelbench, synthetic ...")] = None,
    status: Annotated[str | None, typer.Option(help="accepted or rejected")] = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """List stored tasks with their status and, for rejected ones, the reason."""
    try:
        rows, origins = task_listing(_warehouse(warehouse), origin, status)
    except FileNotFoundError as err:
        _fail(str(err))
    if not rows and origin and origin not in origins:  # say why nothing matched
        console.print(f"no tasks of origin {origin!r}: the warehouse holds {', '.join(origins) or 'none'}"
                      + ("; KernelBench tasks come from kernelbench_tasks with HIPFORGE_KERNELBENCH set"
                         if origin == "kernelbench" else ""), highlight=False)
        return
    table = Table("task_id", "name", "origin", "status", "reason",
                  title=f"{len(rows)} task{'' if len(rows) == 1 else 's'}")
    for row in rows:  # long reasons wrap at word boundaries instead of being cut
        table.add_row(*[str(v) for v in row])
    console.print(table)


from hipforge import cli_kernels, cli_report  # noqa: E402  # register `eval`, `translate`, `report`

cli_kernels.register(app, console, _fail)
cli_report.register(app, console, _fail)
