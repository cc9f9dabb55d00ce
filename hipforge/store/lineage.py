"""Walk the lineage edges both ways from any id and render the result as text or JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import duckdb

from hipforge.store.warehouse import Warehouse

Direction = Literal["ancestors", "descendants"]
MAX_DEPTH = 32

# (table, id column, SQL expression for a short human label)
_LABELS = [
    ("tasks", "task_id", "name || ' (' || origin || ', ' || status || ')'"),
    ("kernels", "kernel_id", "'kernel by ' || agent || ' for task ' || task_id"),
    ("evaluations", "eval_id", "backend || ' ' || verdict || coalesce(' ' || round(speedup_eager, 3) || 'x', '')"),
    ("records", "record_id", "kind || ' record for task ' || task_id"),
    ("checkpoints", "checkpoint_id", "stage || ' checkpoint from ' || base_model"),
]


@dataclass
class LineageNode:
    id: str
    kind: str
    label: str
    run_id: str | None
    relation: str | None = None  # how this node relates to the one above it in the tree
    children: list[LineageNode] = field(default_factory=list)
    shown_above: bool = False  # already expanded elsewhere in this tree (a diamond or a cycle): not again


def _edges(con: duckdb.DuckDBPyConnection, node_id: str, direction: Direction) -> list[tuple[str, str, str]]:
    """(from, to, relation) edges reachable from node_id; UNION stops on cycles."""
    start, step = ("child_id", "parent_id") if direction == "ancestors" else ("parent_id", "child_id")
    sql = f"""
        WITH RECURSIVE walk(src, dst, relation, depth) AS (
            SELECT {start}, {step}, relation, 1 FROM lineage_edges WHERE {start} = ?
            UNION
            SELECT e.{start}, e.{step}, e.relation, w.depth + 1
            FROM lineage_edges e JOIN walk w ON e.{start} = w.dst WHERE w.depth < {MAX_DEPTH}
        )
        SELECT DISTINCT src, dst, relation FROM walk ORDER BY relation, dst
    """
    return con.execute(sql, [node_id]).fetchall()


def _describe(con: duckdb.DuckDBPyConnection, node_id: str) -> tuple[str, str, str | None]:
    for table, column, label in _LABELS:
        row = con.execute(f"SELECT {label}, run_id FROM {table} WHERE {column} = ?", [node_id]).fetchone()
        if row:
            return table.rstrip("s"), row[0], row[1]
    return "external", node_id, None  # an id no table holds (a row not stored, or since removed)


def lineage(warehouse: Warehouse, node_id: str, direction: Direction) -> LineageNode:
    """The tree of ancestors or descendants rooted at node_id (a full id)."""
    with warehouse.connect(read_only=True) as con:
        edges = _edges(con, node_id, direction)
        by_src: dict[str, list[tuple[str, str]]] = {}
        for src, dst, relation in edges:
            by_src.setdefault(src, []).append((dst, relation))

        expanded: set[str] = set()  # each node's own subtree appears once, so diamonds cannot blow the tree up

        def build(current: str, relation: str | None, depth: int) -> LineageNode:
            kind, label, run_id = _describe(con, current)
            node = LineageNode(current, kind, label, run_id, relation, shown_above=current in expanded)
            if node.shown_above or depth >= MAX_DEPTH:
                return node
            expanded.add(current)
            node.children = [build(dst, rel, depth + 1) for dst, rel in by_src.get(current, [])]
            return node

        return build(node_id, None, 0)


def chained_node(warehouse: Warehouse) -> str | None:
    """An id whose parent has a parent of its own (a chain worth walking), None when there is none; read-only."""
    with warehouse.connect(read_only=True) as con:
        row = con.execute(
            "SELECT child_id FROM lineage_edges e WHERE EXISTS "
            "(SELECT 1 FROM lineage_edges p WHERE p.child_id = e.parent_id) LIMIT 1"
        ).fetchone()
    return row[0] if row else None


def to_json(root: LineageNode) -> dict[str, Any]:
    return asdict(root)


def render_text(root: LineageNode, direction: Direction) -> str:
    lines = [f"{direction}:"]
    if not root.children:
        lines.append("  (none)")

    def walk(node: LineageNode, indent: str) -> None:
        for i, child in enumerate(node.children):
            last = i == len(node.children) - 1
            run = f"  [run {child.run_id[:8]}]" if child.run_id else ""
            branch = "└─" if last else "├─"
            above = "  (shown above)" if child.shown_above else ""
            lines.append(f"{indent}{branch} {child.relation} → {child.kind} {child.id}  {child.label}{run}{above}")
            walk(child, indent + ("   " if last else "│  "))

    walk(root, "  ")
    return "\n".join(lines)
