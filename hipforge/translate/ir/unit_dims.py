"""Which dims of each IR value are 1 by construction of the model, not by the task's numbers.

The IR's shapes are the full-size ones the task was traced at, so a 1 there may be a size that another
problem size changes (a batch of 1 in get_inputs, a parameter shape from get_init_inputs). A dim is 1 by
construction only where an op of the model makes it so: a reduction with keepdim, an unsqueeze; elementwise
broadcasting keeps it only where every operand that has the dim has it by construction too. Anything else
(inputs, parameters, ATen calls, kernels) has none, so a rewrite resting on these holds at any size.
"""

from __future__ import annotations

import re

from hipforge.translate.ir.values import Val

_UNSQUEEZE = re.compile(r"^\{0\}\.unsqueeze\((\d+)\)$")
_SQUEEZE = re.compile(r"^\{0\}\.squeeze\(\(([\d, ]*)\)\)$")


def reduced_dims(v: Val) -> tuple[int, ...]:
    """The operand dims a reduction covers."""
    rank = len(v.args[0].shape)
    return tuple(range(rank)) if v.dim is None else tuple(range(v.dim, v.dim + v.span))


def unit_dims(v: Val, known: dict[int, frozenset[int]]) -> frozenset[int]:
    """The dims of `v` that are 1 by construction; `known` holds them for v's operands (by id)."""
    if v.op == "reduce":
        x = v.args[0]
        inner, covered = known.get(id(x), frozenset()), set(reduced_dims(v))
        if v.keepdim:
            return frozenset(inner | covered)
        kept = [k for k in range(len(x.shape)) if k not in covered]  # dims after the reduced ones move left
        return frozenset(n for n, k in enumerate(kept) if k in inner)
    if v.op == "ew":
        rank = len(v.shape)
        units = set()
        for d in range(rank):  # right-aligned, as broadcasting is
            have = [(t, d - (rank - len(t.shape))) for t in v.operands() if d - (rank - len(t.shape)) >= 0]
            if have and all(k in known.get(id(t), frozenset()) for t, k in have):
                units.add(d)
        return frozenset(units)
    if v.op == "aten" and v.kind == "view" and v.args:
        inner = known.get(id(v.args[0]), frozenset())
        if m := _UNSQUEEZE.match(v.fn):
            at = int(m.group(1))
            return frozenset({at} | {k + (k >= at) for k in inner})
        if m := _SQUEEZE.match(v.fn):
            gone = {int(s) for s in m.group(1).split(",") if s.strip()}
            kept = [k for k in range(len(v.args[0].shape)) if k not in gone]
            return frozenset(n for n, k in enumerate(kept) if k in inner)
    return frozenset()
