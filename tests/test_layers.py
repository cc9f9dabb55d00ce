"""Imports run one way (issue 21): the core library knows nothing of Dagster, a Dagster domain folder does not
reach into another's, and nothing imports the code location's definitions back."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("hip_assets", "resources", "sensors", "dagster")
DOMAINS = ("tasks", "kernels", "audit", "reports", "training", "lessons")


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, deferred ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def violations(root: Path) -> list[str]:
    """'path:line: module' of each import that runs against the layers."""
    bad: list[str] = []

    def flag(path: Path, rule) -> None:  # noqa: ANN001
        bad.extend(f"{path.relative_to(root)}:{line}: {module}" for line, module in imports(path) if rule(module))

    for path in sorted((root / "hipforge").rglob("*.py")):
        if path.parent.name == "hipforge" and path.name.startswith("cli"):
            continue  # the command line is a front door: `hipforge demo` drives the Dagster CLI
        flag(path, lambda m: m.split(".")[0] in TOP_LEVEL)
    for domain in DOMAINS:
        others = tuple(f"hip_assets.{d}" for d in DOMAINS if d != domain)
        for path in sorted((root / "hip_assets" / domain).rglob("*.py")):
            flag(path, lambda m, others=others: m.startswith(others) or m == "hip_assets.definitions")
    for folder in ("sensors", "resources"):
        for path in sorted((root / folder).rglob("*.py")):
            flag(path, lambda m: m == "hip_assets.definitions")
    return bad


def test_imports_run_one_way() -> None:
    found = violations(REPO)
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_the_scan_finds_a_deferred_dagster_import_and_a_reach_into_another_domain(tmp_path: Path) -> None:
    (tmp_path / "hipforge" / "store").mkdir(parents=True)
    (tmp_path / "hipforge" / "store" / "x.py").write_text("def f():\n    import dagster as dg\n    return dg\n")
    (tmp_path / "hip_assets" / "lessons").mkdir(parents=True)
    (tmp_path / "hip_assets" / "lessons" / "assets.py").write_text(
        "from hip_assets.run_links import table\nfrom hip_assets.kernels.assets import translated_kernels\n")
    (tmp_path / "sensors").mkdir()
    (tmp_path / "sensors" / "s.py").write_text("from hip_assets.jobs import demo_job\n")
    assert violations(tmp_path) == ["hipforge/store/x.py:2: dagster",
                                    "hip_assets/lessons/assets.py:2: hip_assets.kernels.assets"]
