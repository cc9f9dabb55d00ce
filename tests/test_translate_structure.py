"""The translator is a package of its own, hipforge/translate/, below the agents (issue 21, step 4): it imports
nothing from hipforge.agents, its modules import one another at the top (no import deferred into a function,
where the circles used to hide) and those imports form no circle; hipforge.agents.translate is gone."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "hipforge.translate"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> list[tuple[str, int, bool]]:
    """(module imported, line, at module level) for every hipforge import in the file; `from a import b` counts
    as a.b where a.b is a module of the package (hipforge.translate.lower import ops)."""
    found = []
    tree = ast.parse(path.read_text(), str(path))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            names += [f"{node.module}.{a.name}" for a in node.names
                      if (root / Path(*node.module.split("."), a.name)).with_suffix(".py").exists()]
        else:
            continue
        found += [(name, node.lineno, id(node) in top) for name in names if name.startswith("hipforge")]
    return found


def translate_modules(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "hipforge" / "translate").rglob("*.py"))}


def problems(root: Path) -> list[str]:
    """Imports of hipforge.agents, deferred hipforge imports and import circles, under hipforge/translate/."""
    modules = translate_modules(root)
    found, edges = [], {}
    for name, path in modules.items():
        where = path.relative_to(root)
        edges[name] = set()
        for imported, line, at_top in imports_of(path, root):
            if imported == "hipforge.agents" or imported.startswith("hipforge.agents."):
                found.append(f"{where}:{line}: imports {imported}")
            if not at_top:
                found.append(f"{where}:{line}: imports {imported} inside a function")
            if imported in modules and imported != name:
                edges[name].add(imported)
    found += [f"import circle: {' -> '.join(c)}" for c in circles(edges)]
    return found


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of more than one module, found by depth-first search."""
    seen: set[str] = set()
    found = []

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(edges.get(node, ())):
            if nxt in path:
                cycle = path[path.index(nxt):] + [nxt]
                if not any(set(cycle) == set(c) for c in found):
                    found.append(cycle)
            elif nxt not in seen:
                walk(nxt, path + [nxt])
        seen.add(node)

    for start in sorted(edges):
        if start not in seen:
            walk(start, [start])
    return found


def test_the_translator_stands_below_the_agents() -> None:
    found = problems(REPO)
    assert not found, "hipforge/translate/ must not reach the agents, defer imports or import in a circle:\n" + \
        "\n".join(found)


def test_importing_the_translator_loads_no_agent_and_no_torch() -> None:
    code = ("import sys, hipforge.translate\n"
            "print(sorted(m for m in sys.modules if m.startswith('hipforge.agents') or m == 'torch'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_no_module_is_left_at_the_old_place() -> None:
    assert importlib.util.find_spec("hipforge.agents.translate") is None
    assert not (REPO / "hipforge" / "agents" / "translate").exists()


def test_the_scan_finds_agents_deferred_imports_and_circles(tmp_path: Path) -> None:
    package = tmp_path / "hipforge" / "translate"
    package.mkdir(parents=True)
    for name in ("__init__", "a", "b", "c"):
        (package / f"{name}.py").write_text("")
    (package / "a.py").write_text("from hipforge.translate import b\nfrom hipforge.agents.base import Candidate\n")
    (package / "b.py").write_text("def f():\n    from hipforge.translate.a import x\n")
    (package / "c.py").write_text("def f():\n    import torch\n")  # a lazy third-party import is fine
    assert problems(tmp_path) == ["hipforge/translate/a.py:2: imports hipforge.agents.base",
                                  "hipforge/translate/b.py:2: imports hipforge.translate.a inside a function",
                                  # what the deferred import hid
                                  "import circle: hipforge.translate.a -> hipforge.translate.b -> hipforge.translate.a"]
    (package / "b.py").write_text("from hipforge.translate.c import y\n")
    (package / "c.py").write_text("from hipforge.translate.a import z\n")
    assert problems(tmp_path)[-1] == ("import circle: hipforge.translate.a -> hipforge.translate.b -> "
                                      "hipforge.translate.c -> hipforge.translate.a")
