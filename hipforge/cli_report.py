"""`hipforge report`: KernelBench scores per level beside the seed's table, stored or computed here; and the
demo's reports (the offline agents and every trained checkpoint) through the real Dagster CLI."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown

from hipforge.bench.models import OFFLINE, checkpoint_key
from hipforge.cli_inputs import fail, stored_warehouse
from hipforge.paths import REPO_ROOT, default_warehouse_path
from hipforge.store import Warehouse
from hipforge.store.checkpoints import newest_per_stage
from hipforge.store.warehouse import UnreadableWarehouse

# What `make demo` reports on the reference library: a few tasks per level keep the CPU run in minutes.
DEMO_CONFIG = {"levels": [1, 2, 3], "limit_per_level": 2, "max_output_tokens": 256}


def _show(console: Console, model: str, levels: list[dict], previous: list[dict] | None = None,
          preset: str | None = None) -> None:
    from hipforge.bench.report_tables import (
        checkpoint_note,
        comparison_markdown,
        levels_markdown,
        measured_line,
        model_label,
        seed_markdown,
    )

    task_set = levels[0].get("task_set", "") if levels else ""
    console.rule(f"{model_label(model, preset)} {task_set}".strip())
    if levels:
        console.print(measured_line(levels[0]), highlight=False, markup=False)
    note = checkpoint_note(model, preset)
    if note:
        console.print(note)
    console.print(Markdown(_transposed(levels_markdown(levels))))
    console.print(Markdown(seed_markdown(levels, "ours")))  # the rule above names the model; its id is too wide
    if previous is not None:
        console.print(Markdown(comparison_markdown(previous, levels)))


def _transposed(table: str) -> str:
    """A markdown table with rows and columns swapped: the per-level table has 13 columns, whose headers even
    120 columns cut mid-word; its 3 levels x 2 tolerances fit in 80."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in table.splitlines() if not line.startswith("|---")]
    lines = ["| " + " | ".join(column) + " |" for column in zip(*rows, strict=True)]
    return "\n".join([lines[0], "|---" * len(rows) + "|", *lines[1:]])


def _run(console: Console, store: Warehouse, model: str, source: str, levels: list[int], limit: int,
         only: list[str], backend: str, arch: str, parallel: int, base_model: str) -> None:
    from rich.progress import Progress

    from hipforge.bench.models import make_translator, resolve_model
    from hipforge.bench.report import load_report_tasks, report_config, run_report
    from hipforge.bench.report_store import record_report
    from hipforge.execution.config import EvalConfig
    from hipforge.execution.executor import LocalExecutor
    from hipforge.store.reports import previous_levels

    spec = resolve_model(model, store, base_model)
    task_set, tasks = load_report_tasks(source, levels, limit, backend, only)
    if task_set == "reference":
        console.print("no KernelBench source given (--source or HIPFORGE_KERNELBENCH): the reference library")
    run_id = f"cli-{uuid.uuid4().hex[:12]}"
    with Progress(console=console) as bar:
        job = bar.add_task(f"{model}: {len(tasks)} {task_set} tasks", total=len(tasks))

        def progress(done: int, total: int, what: str) -> None:
            bar.update(job, completed=done, total=total, description=what)

        executor = LocalExecutor(report_config(EvalConfig(backend=backend, arch=arch)), parallel)
        outcomes = run_report(tasks, make_translator(spec), executor, progress)
    previous = previous_levels(store, model, task_set, backend, run_id)
    from hipforge.execution.protocol import protocol_key

    _, level_rows = record_report(store, run_id, spec, task_set, backend, arch, outcomes,
                                  protocol_key(executor.config))
    from hipforge.bench.report_store import checkpoint_preset

    _show(console, model, level_rows, previous, checkpoint_preset(store, model))
    console.print(f"stored as run {run_id}")


def register(app: typer.Typer, console: Console) -> None:
    @app.command()
    def report(
        model: Annotated[str | None, typer.Option(help="offline-agents, gemini[:<model>], baseline, "
                                                       "checkpoint:<id> (default: every stored model)")] = None,
        run: Annotated[bool, typer.Option("--run", help="compute a fresh report here (no Dagster)")] = False,
        source: Annotated[str, typer.Option(envvar="HIPFORGE_KERNELBENCH", help="KernelBench; empty: the "
                                                                                 "reference library")] = "",
        levels: Annotated[str, typer.Option(help="comma-separated levels")] = "1,2,3",
        limit: Annotated[int, typer.Option(help="first N tasks of each level (0: all)")] = 0,
        only: Annotated[list[str] | None, typer.Option(help="keep tasks whose name contains this")] = None,
        backend: Annotated[str, typer.Option(envvar="HIPFORGE_BACKEND")] = "cpu",
        arch: Annotated[str, typer.Option(help="gfx950; sm_90 on cuda")] = "gfx950",
        parallel: Annotated[int, typer.Option(help="evaluations in flight")] = 2,
        base_model: Annotated[str, typer.Option(envvar="HIPFORGE_BASE_MODEL", help="the baseline model")] = "",
        warehouse: Annotated[Path | None, typer.Option(help="DuckDB file")] = None,
    ) -> None:
        """KernelBench scores per level at fp32 1e-4 and 1e-2, beside the seed's table (DESIGN.md §1)."""
        from hipforge.llm import LLMConfigError
        from hipforge.store.reports import latest_levels

        store = Warehouse(warehouse or default_warehouse_path()) if run else stored_warehouse(warehouse)
        try:
            if run:
                _run(console, store, model or OFFLINE, source, [int(x) for x in levels.split(",")], limit,
                     only or [], backend, arch, parallel, base_model)
                return
            stored = latest_levels(store, model)
        except (LLMConfigError, ValueError, FileNotFoundError, UnreadableWarehouse) as err:
            fail(str(err))
        if not stored:
            fail(f"no stored report{' of ' + model if model else ''}: materialize kernelbench_report, or use --run")
        from hipforge.bench.report_store import checkpoint_preset

        for name, rows in stored.items():
            _show(console, name, rows, preset=checkpoint_preset(store, name))


def demo_reports(env: dict[str, str], console: Console) -> None:
    """The report of the offline agents and of every trained checkpoint, each a Dagster run of its partition."""
    import dagster as dg

    store = Warehouse(default_warehouse_path())
    from hipforge.bench.report_store import opening_order

    # the order the automations use too: the asset page opens on the latest materialization (the most meaningful)
    keys = opening_order(store, [checkpoint_key(cid) for cid in newest_per_stage(store)] + [OFFLINE])
    with contextlib.chdir(REPO_ROOT):  # where the Dagster CLI runs: dagster.yaml's storage paths are relative
        instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
        try:
            instance.add_dynamic_partitions("models", keys)
        finally:
            instance.dispose()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as config:  # JSON is YAML, as the CLI wants it
        config.write(json.dumps({"ops": {"kernelbench_report": {"config": DEMO_CONFIG}}}))
        config.flush()
        for key in keys:  # the named job, so the run list says what these runs are (not __ASSET_JOB)
            console.print(f"[bold]reporting[/bold] {key}")
            command = [sys.executable, "-m", "dagster", "job", "execute", "-j", "checkpoint_reports", "--tags",
                       json.dumps({"dagster/partition": key}), "--config", config.name, "-m", "hip_assets.definitions"]
            if subprocess.run(command, env=env, cwd=REPO_ROOT).returncode != 0:
                fail(f"the report of {key} failed; the Dagster log above names the step")
    from hipforge.bench.report_store import checkpoint_preset
    from hipforge.store.reports import latest_levels

    for key in keys:
        for name, rows in latest_levels(store, key).items():
            _show(console, name, rows, preset=checkpoint_preset(store, name))
