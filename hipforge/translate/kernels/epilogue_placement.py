"""Which heavy ops (convolutions, GEMMs) compute the fused elementwise group after them as their epilogue:
the rule conv_epilogue.py and gemm_epilogue.py share. A heavy op is taken in when one fused group alone reads
its output, that group has no reduction, yields the heavy op's shape and no other heavy op computes it, and
its kernel builds; otherwise it stays in ATen (today's split) with the reason recorded."""

from __future__ import annotations

from collections.abc import Callable

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val


def place(heavy_ops: list[Val], groups: list[list[Val]], output: Val, users: dict[int, list[Val]],
          taken: dict[int, Val], noun: str, build: Callable[[Val, list[Val]], object],
          unsupported: Callable[[Val], str | None] = lambda v: None) -> list[str]:
    """Adds to `taken` (id of a fused group's result -> the heavy op whose kernel computes it) each of
    `heavy_ops` that can compute its readers' group; one note per op: "fused" or "aten (why)". `build` raises
    Untranslatable where the kernel cannot be built; `unsupported` says why an op has no kernel of ours."""
    group_of = {id(m): k for k, members in enumerate(groups) for m in members}
    notes = []
    for heavy in heavy_ops:
        readers = users.get(id(heavy), [])
        reason = unsupported(heavy) or _why_not(heavy, groups, group_of, output, readers, taken, noun, build)
        if reason is None:  # every reader is in one group
            taken[id(groups[group_of[id(readers[0])]][-1])] = heavy
        notes.append("fused" if reason is None else f"aten ({reason})")
    return notes


def _why_not(heavy: Val, groups: list[list[Val]], group_of: dict[int, int], output: Val, readers: list[Val],
             taken: dict[int, Val], noun: str, build: Callable[[Val, list[Val]], object]) -> str | None:
    """Why `heavy` cannot compute the fused group after it; None when it can."""
    if heavy is output or not readers:
        return "no elementwise work follows it"
    outside = sorted({u.fn.split("(")[0].replace("{0}.", "") or u.op for u in readers if id(u) not in group_of})
    if outside:
        return f"its output is also read by {', '.join(outside)}"
    if len({group_of[id(u)] for u in readers}) > 1:
        return "its output is read by more than one fused kernel"
    members = groups[group_of[id(readers[0])]]
    if any(m.op == "reduce" for m in members):
        return "a reduction follows it in its fused kernel"  # norms, pooling, logsumexp: not an epilogue's work
    if (other := taken.get(id(members[-1]))) is not None:
        return f"its fused kernel computes another {'convolution' if other.kind == 'conv' else 'heavy op'}"
    if members[-1].shape != heavy.shape:
        return f"the elementwise result {members[-1].shape} is not the {noun}'s shape {heavy.shape}"
    try:
        build(heavy, members)  # builds only what this kernel would
    except Untranslatable as exc:
        return str(exc)
    return None
