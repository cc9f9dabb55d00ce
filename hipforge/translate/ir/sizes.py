"""Sizes read from tensors (x.shape[k], x.size(k)) and integer arithmetic on them (b * t, e // heads).

Each keeps its full-size value and a Python expression over the tensors it comes from, so that a reshape,
a slice or a scale written with it holds at any problem size: a constant taken at the full size would be
wrong at any other. The model's int attributes (self.n_head, traced as get_attr nodes) are sizes written
as such; literal ints are written as they are, and an int attribute used as a number is its value.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Scalar, Val

_SLOT = re.compile(r"\{(\d+)\}")
_SYMBOLS: dict[Callable[[Any, Any], Any], str] = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "//", operator.mod: "%"}


class Size(int):
    """An int with `expr`, Python over `{0}`, `{1}`, ... that stand for the tensors in `sources`."""

    expr: str
    sources: tuple[Val, ...]
    anchor: str | None  # the model's own int (self.factor): a tensor a number built from it is built like

    def __new__(cls, value: int, expr: str, sources: tuple[Val, ...], anchor: str | None = None) -> Size:
        size = super().__new__(cls, value)
        size.expr, size.sources, size.anchor = expr, sources, anchor
        return size


def dim(x: Val, index: int) -> Size:
    index %= max(len(x.shape), 1)
    return Size(x.shape[index], f"{{0}}.shape[{index}]", (x,))


def shape_of(x: Val) -> tuple[Size, ...]:
    return tuple(dim(x, k) for k in range(len(x.shape)))


def size(x: Val, index: int | None = None) -> Any:
    return shape_of(x) if index is None else dim(x, index)


def render(values: Any, sources: list[Val]) -> list[str]:
    """Each int as Python: a Size over `sources` (appended to as needed, so the caller's slots stay put)."""
    out = []
    for v in values:
        if not isinstance(v, Size):
            out.append(repr(v))
            continue
        slots = []
        for s in v.sources:
            if not any(s is known for known in sources):
                sources.append(s)
            slots.append(next(k for k, known in enumerate(sources) if known is s))
        out.append(_SLOT.sub(lambda m, slots=slots: f"{{{slots[int(m.group(1))]}}}", v.expr))
    return out


def arithmetic(fallback: Callable[..., Any], op: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """operator.<op> on two ints of which one is a Size gives a Size; anything else is the table's own."""
    def lowered(a: Any, b: Any, *rest: Any, **kwargs: Any) -> Any:
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b))
        if not (ints and (isinstance(a, Size) or isinstance(b, Size))) or rest or kwargs:
            return fallback(a, b, *rest, **kwargs)
        sources: list[Val] = []
        left, right = render((a, b), sources)
        anchor = next((v.anchor for v in (a, b) if isinstance(v, Size) and v.anchor), None)
        return Size(op(int(a), int(b)), f"({left} {_SYMBOLS[op]} {right})", tuple(sources), anchor)
    return lowered


def as_number(v: Any) -> Any:
    """A size used as a number (x / x.size(1), math.sqrt(head_dim)) becomes a 0-d tensor the forward
    builds from its inputs' sizes at run time."""
    if not isinstance(v, Size):
        return v
    if not v.sources:  # the model's own int (x * self.factor): read at run time, as its floats are
        return Scalar(float(v), v.expr, v.anchor) if v.anchor is not None else int(v)
    if any(s.op != "input" for s in v.sources):  # built in the forward after the tensors it reads
        return Val("aten", (), v.sources, fn=f"{{0}}.new_full((), float({v.expr}))", kind="fill")
    value = v.expr.format(*(s.ref for s in v.sources))
    return Val("input", (), ref=f"{v.sources[0].ref}.new_full((), float({value}))")


def size_tables(known: dict[Any, Any]) -> dict[Any, Any]:
    """The operator entries that also do size arithmetic (fx records `e // heads` as operator.floordiv)."""
    def no_tensor_form(a: Any, b: Any) -> Any:
        raise Untranslatable("floor division or modulo of tensors")

    return {op: arithmetic(known.get(op, no_tensor_form), op) for op in _SYMBOLS}
