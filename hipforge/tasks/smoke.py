"""Smoke scale: rewrite a task's sizes so its reference runs on a CPU in about a second.

Only module-level constants and int literals inside ``get_inputs``/``get_init_inputs`` change; the
Model class is never touched. Sizes map by value, so equal sizes stay equal (square matrices,
residual adds), and a map keeps order and divisibility between sizes and towards the small ints
that stay (kernel sizes, groups, heads). Text edits at node positions keep comments and layout.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hipforge.tasks.source import assignments, eval_constant, parse_source, size_constants

# Names whose values are hyperparameters even when large; batch names get the rung's batch size.
PROTECTED = re.compile(
    r"kernel|stride|pad|dilation|group|patch|window|pool|ratio|stage|^(num_|n_)?(layers|heads?)$", re.I)
BATCH = re.compile(r"batch|^bs$", re.I)
INPUT_FUNCTIONS = ("get_inputs", "get_init_inputs")


@dataclass(frozen=True)
class SmokeRung:
    """One step of the ladder: ints above ``threshold`` shrink (by powers of two) to at least ``floor``.

    ``uniform`` divides every size by one common power of two instead: sizes shrink less, but hidden
    relations between them survive (a LayerNorm over ``W * stride`` elements sized ``out_channels``).
    """

    threshold: int
    floor: int
    batch: int | None = 2  # 2, not 1: training BatchNorm needs 2 values; None: batch counts as a size
    uniform: bool = False


BATCH_ONLY = SmokeRung(threshold=2**62, floor=2**62)
# Most to least aggressive; some L3 nets need spatial sizes >= 32, fixed-size classifiers need all.
# A batch of None is for tasks whose batch is also a feature size (HingeLoss: batch_size == input dim).
LADDER: tuple[SmokeRung, ...] = (
    SmokeRung(16, 16), SmokeRung(32, 32), SmokeRung(16, 16, uniform=True),
    SmokeRung(16, 16, batch=None, uniform=True), SmokeRung(64, 64), SmokeRung(128, 128), BATCH_ONLY)


@dataclass(frozen=True)
class SmokeSource:
    source: str
    changed: dict[str, tuple[Any, Any]]  # constant name (or "get_inputs:224" for a literal) -> (old, new)
    rung: SmokeRung | None  # None: the source as written


def smoke_ladder(source: str, ladder: tuple[SmokeRung, ...] = LADDER) -> list[SmokeSource]:
    """Distinct smoke sources from most to least aggressive (rungs that change nothing new are dropped)."""
    seen: set[str] = set()
    out: list[SmokeSource] = []
    for rung in ladder:
        scaled = smoke_scale(source, rung)
        if scaled.source not in seen:
            seen.add(scaled.source)
            out.append(scaled)
    return out


def smoke_scale(source: str, rung: SmokeRung = LADDER[0]) -> SmokeSource:
    tree = parse_source(source)
    sites = [(node, value, "size" if role == "batch" and rung.batch is None else role, where)
             for node, value, role, where in _sites(tree)]  # role: "batch", "kept" or "size"
    domain = {v for _, v, role, _ in sites if role == "size" and v > rung.threshold}
    # ints that stay as they are, and that a shrunk size they divided must stay a multiple of
    keep = {v for _, v, role, _ in sites if role == "kept" or role == "size" and v <= rung.threshold}
    keep = {v for v in keep | stated_divisors(tree) if v > 1}
    mapping = (uniform_map if rung.uniform else size_map)(domain, keep, rung.floor)
    edits: list[tuple[ast.expr, int]] = []
    changed: dict[str, tuple[Any, Any]] = {}
    for node, value, role, where in sites:
        if role == "batch":
            new = min(value, rung.batch or value)
        else:
            new = mapping.get(value, value) if role == "size" else value
        if new != value:
            edits.append((node, new))
            if where in INPUT_FUNCTIONS:
                changed[f"{where}:{value}"] = (value, new)
    new_source = _apply(source, edits)
    before, after = size_constants(source), size_constants(new_source)
    changed.update({k: (v, after[k]) for k, v in before.items() if k in after and after[k] != v})
    return SmokeSource(new_source, changed, rung)


def size_map(domain: set[int], keep: set[int], floor: int) -> dict[int, int]:
    """Shrink each size, smallest first, keeping order and divisibility; prefer exact power-of-two cuts."""
    mapping: dict[int, int] = {}
    for v in sorted(domain):
        low = min(v, max([floor, *mapping.values()]))  # never below a smaller size's new value
        need = math.lcm(*[d for d in keep if v % d == 0], *[n for u, n in mapping.items() if v % u == 0])
        best = v
        k = 1
        while v % 2**k == 0 and v // 2**k >= low:
            if (v // 2**k) % need == 0:
                best = v // 2**k
            k += 1
        if best > 2 * low:  # halving cannot get near the floor (odd or irregular size): pick a near value
            # an unconstrained size keeps its residue mod a power of two, so 4095 stays odd and irregular
            mod = 1 << (low.bit_length() - 1)
            near = low + (v - low) % mod if need == 1 else need * math.ceil(low / need)
            best = min(best, near) if near <= v else best
        mapping[v] = best
    return mapping


def uniform_map(domain: set[int], keep: set[int], floor: int) -> dict[int, int]:
    """Divide every size by the largest power of two that keeps the smallest >= floor and kept divisors."""
    if not domain:
        return {}
    scale = 1 << max(0, (min(domain) // floor).bit_length() - 1)
    while scale > 1 and any(v % scale == 0 and (v // scale) % d for v in domain for d in keep if v % d == 0):
        scale //= 2
    return {v: max(1, v // scale) for v in domain}


def stated_divisors(tree: ast.Module) -> set[int]:
    """Literal k in ``x % k`` or ``x // k`` anywhere: the code relies on sizes being multiples of k."""
    return {node.right.value for node in ast.walk(tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.FloorDiv)
            and isinstance(node.right, ast.Constant) and type(node.right.value) is int
            and node.right.value > 1}


def _sites(tree: ast.Module) -> Iterator[tuple[ast.expr, int, str, str]]:
    """Every int that smoke scaling may touch, with its role: "batch", "kept" (protected name) or "size"."""
    for name, expr in assignments(tree):
        role = "batch" if BATCH.search(name) else "kept" if PROTECTED.search(name) else "size"
        for node, value in _int_nodes(expr):
            if role != "batch" or node is expr:  # a batch constant changes only when it is a plain number
                yield node, value, role, name
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in INPUT_FUNCTIONS:
            for stmt in fn.body:
                for node, value in _int_nodes(stmt):
                    yield node, value, "size", fn.name


def _int_nodes(node: ast.AST) -> Iterator[tuple[ast.expr, int]]:
    """Outermost int-valued constant expressions (``1024 * 2`` counts once, as 2048)."""
    if isinstance(node, ast.Constant | ast.BinOp | ast.UnaryOp):
        value = eval_constant(node, {})
        if isinstance(value, int) and not isinstance(value, bool):
            yield node, value
            return
    for child in ast.iter_child_nodes(node):
        yield from _int_nodes(child)


def _apply(source: str, edits: list[tuple[ast.expr, int]]) -> str:
    """Replace each node's text span by the new number (AST offsets are UTF-8 byte columns)."""
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = []
    for node, new in {id(node): (node, new) for node, new in edits}.values():  # `a = b = 64` shares a node
        assert node.end_lineno is not None and node.end_col_offset is not None
        begin = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        spans.append((begin, end, str(new)))
    for begin, end, text in sorted(spans, reverse=True):
        data = data[:begin] + text.encode() + data[end:]
    return data.decode()
