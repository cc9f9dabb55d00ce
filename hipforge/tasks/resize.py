"""A second size for a task: the same model at other sizes and other init arguments.

A kernel that is correct at the task's sizes but wrong at this second size is shape-specialized: it
hard-codes a size or a constructor argument. The second size keeps what an honest general kernel may
rely on: divisibility by powers of two up to 64 (a float4 loop without a tail stays honest), the
divisors the model needs (groups, heads, patches, ``x // k`` in its code), the order of sizes and a
floor at the hyperparameters that stay (a kernel never outgrows its input). Sizes map by value, as in
smoke scaling, so equal sizes stay equal; batch-like sizes halve, so the evaluation stays cheap.
Floats passed to the model (scale factors, clamp bounds, multipliers), and small ints named as such,
move by a common factor, which keeps their order; tolerances, slopes and dropout probabilities stay,
and so do hyperparameters (kernel sizes, strides, padding, dilation, groups, heads, tensor axes): they
are structural, and a kernel may be written for them. Pure source-to-source.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass

from hipforge.tasks.smoke import INPUT_FUNCTIONS, PROTECTED, _apply, _int_nodes, _sites, stated_divisors
from hipforge.tasks.source import assignments, eval_constant, parse_source, size_constants

# Kept ints besides smoke's protected hyperparameters: tensor axes and values that are not sizes.
AXIS = re.compile(r"(^|_)(dim|axis)$", re.I)
VALUE = re.compile(r"scale|factor|multipl|value|min|max|clamp|shift|alpha|beta|threshold|margin|divis", re.I)
# Floats that stay: tolerances, slopes and probabilities change a model's character, not its size.
KEPT_FLOAT = re.compile(r"eps|slope|drop|momentum|prob|ratio|^p$", re.I)
DIVISOR = re.compile(r"group|head|patch|window|cluster", re.I)  # kept ints that sizes must stay multiples of
FLOAT_FACTOR = 1.5
POWER_OF_TWO_CAP = 64  # divisibility by powers of two beyond this is not promised at the second size
FALLBACK_CAP = 8
MIN_LITERAL = 8  # ints written in get_inputs below this are values (randint bounds, scales), not sizes
SMALL_TASK = 1 << 20  # input elements under which a size may grow (a smoke-scale task of all-16 sizes)


Site = tuple[ast.expr, int, str]  # node, value, where (constant name or input function)


@dataclass(frozen=True)
class Resized:
    source: str
    changed: dict[str, tuple[object, object]]  # constant name (or "get_inputs:224") -> (old, new)


def describe(changed: dict[str, tuple[object, object]]) -> str:
    """``batch_size=8, scale=0.75``: the second size in a verdict's message."""
    return ", ".join(f"{name}={new}" for name, (_, new) in changed.items())


def second_size(source: str) -> Resized | None:
    """The task at its second size, or None when it has nothing that can change."""
    tree = parse_source(source)
    batch, sizes, kept = _int_roles(tree)
    # A task at its smallest sizes (16 everywhere, a 3D input) may have no room to grow: its sizes then
    # move down to other multiples of 8, which a float4 kernel without a tail still handles.
    for cap in (POWER_OF_TWO_CAP, FALLBACK_CAP):
        new_source, table = _fit(source, tree, batch, sizes, kept, cap)
        if any(table.get(v, v) != v for _, v, _ in sizes):
            break
    if new_source == source:
        return None
    return Resized(new_source, _changes(tree, parse_source(new_source), batch + sizes, table))


def _fit(source: str, tree: ast.Module, batch: list[Site], sizes: list[Site], kept: set[int],
         cap: int) -> tuple[str, dict[int, int]]:
    """The resized source within the cost budget, and its map of ints: the batch halves until it is 2,
    then sizes that would grow stay as they are, smallest first."""
    divisors = {v for v in kept if v > 1} & _divisor_values(tree) | stated_divisors(tree)
    values = sorted({v for _, v, _ in sizes})
    budget = max(_input_elements(tree), SMALL_TASK)
    batch_map = {v: v // 2 for _, v, _ in batch if v >= 4}
    frozen: set[int] = set()
    while True:
        mapping = _size_map(values, divisors, kept, frozen, cap)
        edits = [(node, table[v]) for group, table in ((sizes, mapping), (batch, batch_map))
                 for node, v, _ in group if table.get(v, v) != v]
        edits += [(node, new) for node, value, _ in _value_sites(tree) if (new := _value_move(value)) != value]
        new_source = _apply(source, edits)  # type: ignore[arg-type]  # str(new) writes a float as well
        if _input_elements(parse_source(new_source)) <= budget:
            return new_source, {**mapping, **batch_map}
        halved = {v: batch_map.get(v, v) // 2 for _, v, _ in batch if batch_map.get(v, v) >= 4}
        grown = [v for v in values if mapping[v] > v and v not in frozen]
        if halved:
            batch_map.update(halved)
        elif grown:
            frozen.add(grown[0])
        else:
            return new_source, {**mapping, **batch_map}


def _changes(before: ast.Module, after: ast.Module, sites: list[Site],
             table: dict[int, int]) -> dict[str, tuple[object, object]]:
    """Constants whose value changed, then literals in the input functions (as "get_inputs:224")."""
    old, new = size_constants(before), size_constants(after)
    changed: dict[str, tuple[object, object]] = {k: (v, new[k]) for k, v in old.items() if k in new and new[k] != v}
    for _, value, where in sites:
        if where in INPUT_FUNCTIONS and table.get(value, value) != value:
            changed[f"{where}:{value}"] = (value, table[value])
    for _, value, where in _value_sites(before):
        if where in INPUT_FUNCTIONS:
            changed[f"{where}:{value}"] = (value, _value_move(value))
    return changed


def _int_roles(tree: ast.Module) -> tuple[list[Site], list[Site], set[int]]:
    """(batch sites, size sites, kept values): smoke's roles, with axes, value-like ints, 0 and 1 kept, and
    the ints the model's own code writes (nn.Conv2d(3, ...) fixes 3 input channels); a batch equal to a
    size is a size (HingeLoss broadcasts a (batch,) target over an input of that width)."""
    batch: list[Site] = []
    sizes: list[Site] = []
    code = _code_ints(tree)
    kept = set(code)
    for node, value, role, where in _sites(tree):
        literal = where in INPUT_FUNCTIONS
        if role == "kept" or value < 2 or value in code and role != "batch" or AXIS.search(where) and value <= 4 \
                or VALUE.search(where) or literal and value < MIN_LITERAL:
            kept.add(value)
        elif role == "batch":
            batch.append((node, value, where))
        else:
            sizes.append((node, value, where))
    values = {v for _, v, _ in sizes}
    sizes += [site for site in batch if site[1] in values]
    batch = [site for site in batch if site[1] not in values]
    return batch, sizes, kept


def _code_ints(tree: ast.Module) -> set[int]:
    """Int constants in the model's classes and helper functions (not the input functions)."""
    return {v for fn in tree.body if isinstance(fn, ast.ClassDef | ast.FunctionDef) and fn.name not in INPUT_FUNCTIONS
            for stmt in fn.body for _, v in _int_nodes(stmt)}


def _divisor_values(tree: ast.Module) -> set[int]:
    """Ints bound to names like num_groups / num_heads: channels and embeddings must stay their multiples."""
    return {v for name, expr in assignments(tree) if DIVISOR.search(name) for _, v in _int_nodes(expr)}


def _size_map(values: list[int], divisors: set[int], kept: set[int], frozen: set[int], cap: int) -> dict[int, int]:
    """Smallest first: a different multiple of the same power-of-two factor (and of the divisors it has),
    below when that stays above the smaller sizes' new values and the kept ints it was above, else above."""
    mapping: dict[int, int] = {}
    for v in values:
        if v in frozen:
            mapping[v] = v
            continue
        step = math.lcm(math.gcd(v, cap), *[d for d in divisors if v % d == 0])
        low = max([2, *[k for k in kept if k <= v], *[n + 1 for n in mapping.values()]])
        downs = [v - j * step for j in range(1, v // step) if v - j * step >= max(low, v / 2)]
        ups = [v + j * step for j in range(1, 4)]
        mapping[v] = next((c for c in downs + ups if c >= low), v)
    return mapping


def _input_elements(tree: ast.Module) -> int:
    """Elements of the tensors get_inputs builds from constant shapes (``torch.randn(b, n)``), a cost proxy."""
    env = size_constants(tree)
    total = 0
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "get_inputs":
            for call in ast.walk(fn):
                if isinstance(call, ast.Call):
                    dims = [eval_constant(a.value if isinstance(a, ast.Starred) else a, env) for a in call.args]
                    flat = [d for x in dims for d in (x if isinstance(x, tuple | list) else [x])]
                    if flat and all(type(d) is int and d > 0 for d in flat):
                        total += math.prod(flat)
    return total


def _value_sites(tree: ast.Module) -> list[tuple[ast.expr, float, str]]:
    """Module-level float constants, small ints named as values (hardtanh_min = -1, scale = 2) and float
    literals passed to the model (get_init_inputs)."""
    sites = [(expr, value, name) for name, expr in assignments(tree)
             if not KEPT_FLOAT.search(name) and isinstance(expr, ast.Constant | ast.UnaryOp)
             and (type(value := eval_constant(expr, {})) is float
                  or type(value) is int and VALUE.search(name) and not PROTECTED.search(name) and abs(value) < 16)]
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "get_init_inputs":
            sites += [(node, node.value, fn.name) for node in ast.walk(fn)
                      if isinstance(node, ast.Constant) and type(node.value) is float]
    return sites


def _value_move(value: float) -> float:
    """A nearby different value of the same sign and type (0 stays: it is often a bound or an identity)."""
    return round(value * FLOAT_FACTOR) if type(value) is int else float(f"{value * FLOAT_FACTOR:.6g}")
