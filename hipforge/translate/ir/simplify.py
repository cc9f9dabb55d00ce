"""Algebra the translator can prove, applied to the IR before planning.

Each rewrite holds for every float32 input, NaN and infinities included, as PyTorch computes the model,
and at every problem size: dims it relies on being 1 are 1 by construction (ir/unit_dims.py).

unit-reduce  sum, mean, max, min or prod over dims that are 1 is its operand (a view where keepdim is
             off). Softmax, log-softmax and logsumexp over such a dim are left as the elementwise math
             around these reductions (exp(x - x) / exp(x - x): 1, or NaN where x is not finite).
unit-var     the biased variance over dims that are 1 is x - x: 0, or NaN where x is not finite.
clamp-clamp  clamp(clamp(x, a, b), c, d): the outer one goes where [a, b] lies inside [c, d] (a <= b
             provable), the inner one where [c, d] lies inside [a, b] (whatever c and d are: torch.clamp
             with min > max gives max, both ways). Bounds compare as literals, or as the very same model
             attribute; torch.clamp keeps a NaN either way.

Nothing is rewritten from finiteness (x - x is not 0 for inf or NaN) or from a size in the task's numbers.
"""

from __future__ import annotations

import math
import re

from hipforge.translate.ir.unit_dims import reduced_dims, unit_dims
from hipforge.translate.ir.values import Val, ew, topo

IDENTITY_REDUCTIONS = ("sum", "mean", "max", "min", "prod")
_BOUND = r"(\{\d+\}|-?INFINITY|-?[0-9][0-9.e+-]*f)"
_CLAMPS = ((re.compile(rf"^fminf\(fmaxf\(\{{0\}}, {_BOUND}\), {_BOUND}\)$"), "both"),
           (re.compile(rf"^fmaxf\(\{{0\}}, {_BOUND}\)$"), "lo"), (re.compile(rf"^fminf\(\{{0\}}, {_BOUND}\)$"), "hi"))

Bound = float | Val  # a literal (infinite where a side is open) or a 0-d tensor of the model's


def simplify(output: Val) -> tuple[Val, tuple[str, ...]]:
    """The output with every provable rewrite applied, and a note per rewrite. Operands are rewired in
    place, in topological order; where the rewrites would leave no HIP work at all (nothing for a kernel
    to compute, and so nothing the evaluator could tell from PyTorch), the IR is left as it was."""
    order = topo(output)
    snapshot = [(v, v.args) for v in order]
    users = _fusible_users(order)
    replaced: dict[int, Val] = {}
    units: dict[int, frozenset[int]] = {}
    notes: list[str] = []
    for v in order:
        v.args = tuple(replaced.get(id(a), a) if isinstance(a, Val) else a for a in v.args)
        found = _rewrite(v, units, users.get(id(v), False))
        if found is not None:
            new, note = found
            replaced[id(v)] = new
            notes.append(note)
            if id(new) not in units:  # a value built here (a view, x - x) over operands already known
                units[id(new)] = unit_dims(new, units)
        units[id(v)] = unit_dims(v, units)
    result = replaced.get(id(output), output)
    if notes and (result.op == "input" or not any(v.fusible or v.op == "kernel" for v in topo(result))):
        for v, args in snapshot:
            v.args = args
        return output, ()
    return result, tuple(notes)


def _fusible_users(order: list[Val]) -> dict[int, bool]:
    """id of a value -> whether some fused (elementwise or reduction) value reads it."""
    found: dict[int, bool] = {}
    for v in order:
        for a in v.operands():
            found[id(a)] = found.get(id(a), False) or v.fusible
    return found


def _rewrite(v: Val, units: dict[int, frozenset[int]], fusible_users: bool) -> tuple[Val, str] | None:
    if v.op == "reduce" and not v.integer:
        return _unit_reduce(v, v.args[0], units, fusible_users)
    if v.op == "ew":
        return _clamp_clamp(v, v.args)
    return None


def _unit_reduce(v: Val, x: Val, units: dict[int, frozenset[int]], fusible_users: bool) -> tuple[Val, str] | None:
    dims = reduced_dims(v)
    if not dims or not set(dims) <= units.get(id(x), frozenset()) or any(x.shape[d] != 1 for d in dims):
        return None
    where = f"dim{'s' if len(dims) > 1 else ''} {', '.join(map(str, dims))} of {x.shape} (1 by construction)"
    if v.fn == "var" and v.keepdim:
        return ew("({0} - {0})", x), f"unit-var: variance over {where} is x - x"
    if v.fn not in IDENTITY_REDUCTIONS:
        return None
    if v.keepdim:
        return x, f"unit-reduce: {v.fn} over {where} is its operand"
    if x.fusible and fusible_users:  # a view here would cut one fused kernel in two; the extent-1 loop is cheaper
        return None
    view = Val("aten", v.shape, (x,), fn=f"{{0}}.squeeze({dims})", kind="view")
    return view, f"unit-reduce: {v.fn} over {where} is its operand, squeezed"


def _clamp_clamp(v: Val, args: tuple) -> tuple[Val, str] | None:
    outer = _clamp(v.fn, args)
    inner_val = args[0] if args and isinstance(args[0], Val) else None
    inner = _clamp(inner_val.fn, inner_val.args) if inner_val is not None and inner_val.op == "ew" else None
    if outer is None or inner is None or not isinstance(inner_val.args[0], Val):
        return None
    (a, b), (c, d) = inner, outer
    if _le(a, c) and _le(d, b):  # the outer range lies inside the inner one: the inner clamp changes nothing
        new = Val("ew", v.shape, (inner_val.args[0],) + args[1:], fn=v.fn)
        return new, f"clamp-clamp: {_say(c, d)} inside {_say(a, b)}: the inner clamp is dropped"
    if _le(c, a) and _le(b, d) and _le(a, b):  # the inner range lies inside the outer one
        return inner_val, f"clamp-clamp: {_say(a, b)} inside {_say(c, d)}: the outer clamp is dropped"
    return None


def _clamp(fn: str, args: tuple) -> tuple[Bound, Bound] | None:
    """(lo, hi) of a clamp template over {0}, an open side as -inf / inf; None if `fn` is no clamp."""
    for pattern, sides in _CLAMPS:
        if m := pattern.match(fn):
            bounds = [_bound(text, args) for text in m.groups()]
            if any(b is None for b in bounds):
                return None
            if sides == "both":
                return bounds[0], bounds[1]
            return (bounds[0], math.inf) if sides == "lo" else (-math.inf, bounds[0])
    return None


def _bound(text: str, args: tuple) -> Bound | None:
    if text.startswith("{"):
        k = int(text[1:-1])
        operand = args[k] if k < len(args) else None
        return operand if isinstance(operand, Val) and operand.op == "input" and operand.shape == () else None
    if text.endswith("INFINITY"):
        return -math.inf if text.startswith("-") else math.inf
    try:
        return float(text[:-1])
    except ValueError:
        return None


def _le(p: Bound, q: Bound) -> bool:
    """p <= q for every value the model may hold: two literals, or the very same 0-d tensor."""
    if p == -math.inf or q == math.inf:  # an open side (a Val never equals a float)
        return True
    if isinstance(p, Val) or isinstance(q, Val):
        return isinstance(p, Val) and isinstance(q, Val) and (p is q or p.ref == q.ref)
    return p <= q


def _say(lo: Bound, hi: Bound) -> str:
    return "[" + ", ".join(b.ref if isinstance(b, Val) else repr(b) for b in (lo, hi)) + "]"
