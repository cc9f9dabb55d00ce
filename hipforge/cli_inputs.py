"""What every `hipforge` command reads from the user, checked once before anything runs: a candidate or task file,
the warehouse, an id. Bad input ends in one line on stderr that names the file or id and the problem, and exit
code 1; never a traceback, and never blamed on the wrong party (a task that cannot run is the task's fault)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from hipforge.paths import default_warehouse_path
from hipforge.store import Warehouse
from hipforge.store.warehouse import UnreadableWarehouse

errors = Console(stderr=True)


def fail(message: str) -> NoReturn:
    # one unwrapped line, so paths stay copyable; the first line of a long reason says what went wrong
    first = (message.strip().splitlines() or ["failed"])[0]
    errors.print(f"[red]error:[/red] {escape(first)}", soft_wrap=True, highlight=False)
    raise typer.Exit(1)


def read_text(path: Path, what: str) -> str:
    """A Python source file's text; what: 'candidate' or 'task', the party a bad file is blamed on."""
    if not path.is_file():
        fail(f"{path} is not a file (the {what} must be a Python source file)")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{path}: not UTF-8 text at byte {e.start} (the {what} must be a Python source file)")


@dataclass(frozen=True)
class CheckedTask:
    source: str  # as written
    judged: str  # what the backend runs
    scale: str  # how to say at what size it ran


def checked_task(path: Path, backend: str) -> CheckedTask:
    """The task, parsed and run once in the sandbox before any candidate is judged against it: a task that does
    not parse, lacks Model or get_inputs, or raises is a task error, not the candidate's runtime_error. The cpu
    backend judges it at the smoke scale that ran (fiber emulation finishes there); others at its own sizes."""
    from hipforge.tasks import TaskError, check_task

    source = read_text(path, "task")
    try:
        run = check_task(source, path.stem)
    except TaskError as e:
        fail(f"{path}: not a usable task ({e})")
    if backend == "cpu":
        return CheckedTask(source, run.source, "the task's smoke scale (cpu backend)")
    return CheckedTask(source, source, "the task's own sizes")


def stored_warehouse(path: Path | None) -> Warehouse:
    """The warehouse a read-only command looks at; missing or not a DuckDB file is said here, once."""
    store = Warehouse(path or default_warehouse_path())
    try:
        with store.connect(read_only=True):
            pass
    except (FileNotFoundError, UnreadableWarehouse) as err:
        fail(str(err))
    return store


def found(path: Path | None, node_id: str) -> tuple[Warehouse, str, dict[str, Any]]:
    """(warehouse, table, row) of an id or a unique prefix of one."""
    store = stored_warehouse(path)
    try:
        table, row = store.find(node_id)
    except KeyError as err:  # its str() would wrap the message in another pair of quotes
        fail(str(err.args[0]))
    return store, table, row
