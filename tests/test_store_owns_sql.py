"""SQL lives only under hipforge/store/: every other module asks a store function by name (issue 21, step 3)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("hipforge", "hip_assets", "sensors", "scripts", "resources")
STORE = Path("hipforge", "store")
SQL_CALLS = {"execute", "executemany", "sql"}


def sql_calls(root: Path) -> list[str]:
    """'path:line: .name(' of every call of an attribute named execute, executemany or sql, on any object, in the
    Python files under root's scanned folders, outside hipforge/store/."""
    found: list[tuple[Path, int, str]] = []
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root)
            if relative.is_relative_to(STORE):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(relative))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS:
                    found.append((relative, node.lineno, node.func.attr))
    return [f"{path}:{line}: .{name}(" for path, line, name in sorted(found)]


def test_sql_is_only_under_store() -> None:
    found = sql_calls(REPO)
    assert not found, "SQL outside hipforge/store/ (move it into a store module):\n" + "\n".join(found)


def test_the_scan_names_file_and_line_and_spares_the_store(tmp_path: Path) -> None:
    (tmp_path / "hipforge" / "store").mkdir(parents=True)
    (tmp_path / "sensors").mkdir()
    (tmp_path / "hipforge" / "store" / "tasks.py").write_text("con.execute('SELECT 1')\n")
    (tmp_path / "sensors" / "s.py").write_text("x = 1\nrows = (\n    duckdb.connect().sql('SELECT 1')\n)\n"
                                               "cur.executemany('INSERT', [])\nf(execute=1)\nexecute('not an attr')\n")
    assert sql_calls(tmp_path) == ["sensors/s.py:3: .sql(", "sensors/s.py:5: .executemany("]
