"""The project's own library of PyTorch reference tasks, in KernelBench format.

Each task is one file ``<category>/<name>.py`` defining ``class Model(nn.Module)``, module-level size
constants, ``get_inputs()`` and ``get_init_inputs()``. Which tasks combine which others is declared in
``catalog.toml`` (``[composed_of]``); :func:`load_library` reads both and checks them. Plain Python:
nothing here imports torch or Dagster.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hipforge import pyast

LIBRARY_DIR = Path(__file__).resolve().parent
CATALOG_PATH = LIBRARY_DIR / "catalog.toml"
REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")


class LibraryError(ValueError):
    """The library's files or its catalog are inconsistent."""


@dataclass(frozen=True)
class LibraryTask:
    name: str  # "<category>/<file stem>", e.g. "elementwise/gelu_tanh"
    category: str
    source: str  # file text
    composed_of: tuple[str, ...]  # names of library tasks this one combines, else ()
    description: str  # one line, from Model's docstring


def _task_files(root: Path) -> list[Path]:
    return sorted(
        path
        for category in root.iterdir()
        if category.is_dir() and not category.name.startswith(("_", "."))
        for path in category.glob("*.py")
        if not path.name.startswith("_")
    )


def _describe(name: str, source: str) -> str:
    """First line of Model's docstring; also checks the file defines what a task must define."""
    try:
        tree = pyast.parse(source)
    except SyntaxError as exc:
        raise LibraryError(f"task {name!r} does not parse: {exc}") from exc
    defined = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    missing = [required for required in REQUIRED_NAMES if required not in defined]
    if missing:
        raise LibraryError(f"task {name!r} does not define {', '.join(missing)}")
    doc = ast.get_docstring(defined["Model"])
    if not doc:
        raise LibraryError(f"task {name!r}: class Model has no docstring")
    return doc.strip().splitlines()[0].strip()


def _read_catalog(path: Path) -> dict[str, tuple[str, ...]]:
    if not path.exists():
        return {}
    with path.open("rb") as fh:
        table = tomllib.load(fh).get("composed_of", {})
    return {name: tuple(parts) for name, parts in table.items()}


def _check_catalog(catalog: dict[str, tuple[str, ...]], names: set[str]) -> None:
    for name, parts in catalog.items():
        if name not in names:
            raise LibraryError(f"catalog.toml: [composed_of] names {name!r}, which is not a library task")
        for part in parts:
            if part not in names:
                raise LibraryError(
                    f"catalog.toml: {name!r} is composed_of {part!r}, which is not a library task"
                )
            if part == name:
                raise LibraryError(f"catalog.toml: {name!r} lists itself as a part")
        if len(set(parts)) != len(parts):
            raise LibraryError(f"catalog.toml: {name!r} lists a part twice")
    # A composition chain must bottom out: reject cycles.
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = " -> ".join([*path[path.index(name) :], name])
            raise LibraryError(f"catalog.toml: composed_of cycle {cycle}")
        state[name] = 1
        for part in catalog.get(name, ()):
            visit(part, [*path, name])
        state[name] = 2

    for name in catalog:
        visit(name, [])


def load_library(root: Path | None = None, catalog_path: Path | None = None) -> list[LibraryTask]:
    """Every task of the library, sorted by name, with its parts checked against the catalog."""
    root = LIBRARY_DIR if root is None else Path(root)
    catalog = _read_catalog(root / "catalog.toml" if catalog_path is None else Path(catalog_path))
    sources = {
        f"{path.parent.name}/{path.stem}": path.read_text(encoding="utf-8") for path in _task_files(root)
    }
    _check_catalog(catalog, set(sources))
    return [
        LibraryTask(
            name=name,
            category=name.split("/", 1)[0],
            source=source,
            composed_of=catalog.get(name, ()),
            description=_describe(name, source),
        )
        for name, source in sorted(sources.items())
    ]


def library_task(name: str) -> LibraryTask:
    """One task by name, e.g. ``library_task("gemm/linear_gelu")``."""
    for task in load_library():
        if task.name == name:
            return task
    raise KeyError(f"no library task named {name!r}")


def composition_depth(tasks: list[LibraryTask]) -> dict[str, int]:
    """Longest composed_of chain below each task: 0 for a single op, 1 if its parts are single ops, ..."""
    parts = {task.name: task.composed_of for task in tasks}
    depth: dict[str, int] = {}

    def walk(name: str) -> int:
        if name not in depth:
            depth[name] = 1 + max((walk(p) for p in parts[name]), default=-1)
        return depth[name]

    for name in parts:
        walk(name)
    return depth


__all__ = ["LibraryError", "LibraryTask", "composition_depth", "library_task", "load_library"]
