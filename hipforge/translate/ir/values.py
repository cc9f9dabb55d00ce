"""The translator's small IR: values computed by fused HIP kernels, ATen calls or forward inputs."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from hipforge.translate.errors import Untranslatable

REDUCE_INIT = {"sum": "0.0f", "mean": "0.0f", "batchmean": "0.0f", "max": "-INFINITY", "min": "INFINITY",
               "prod": "1.0f"}


@dataclass(eq=False)
class Val:
    """One tensor. `op` says who computes it:

    input  - a forward argument or a registered parameter/buffer (`ref` is its Python expression)
    ew     - elementwise: `fn` is a C expression over {0}, {1}, ... (operands: Val or float)
    reduce - over dims [dim, dim + span) (dim None: every element) with `fn` in
             sum|mean|batchmean|max|min|prod|argmax|argmin
    aten   - a PyTorch call kept on the host: `fn` formats the Python call over its operands
    kernel - a standalone HIP kernel (pooling, ...): extra["build"](name, val, params) returns it
    """

    op: str
    shape: tuple[int, ...]
    args: tuple[Any, ...] = ()
    fn: str = ""
    ref: str = ""
    kind: str = ""  # aten: linear | matmul | bmm | conv | view
    dim: int | None = None
    span: int = 1  # how many adjacent dims, from `dim` on, a reduction covers
    keepdim: bool = False
    integer: bool = False  # int64 result (argmax/argmin); everything else is float32
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fusible(self) -> bool:
        return self.op in ("ew", "reduce")

    def operands(self) -> list[Val]:
        return [a for a in self.args if isinstance(a, Val)]


class Scalar(float):
    """A float the model holds (self.scale, a module's min_val): its traced value, and `val`, a 0-d tensor
    the forward builds from the attribute at run time. Kernels take it as an operand, so a model built
    with other constructor arguments gets its own value, never the traced instance's literal."""

    expr: str  # Python over the model: "self.scale", "(1.0 / self.scale)"
    anchor: str  # a tensor of the forward that the 0-d tensor is built like (device)
    _val: Val | None

    def __new__(cls, value: float, expr: str, anchor: str) -> Scalar:
        scalar = super().__new__(cls, value)
        scalar.expr, scalar.anchor, scalar._val = expr, anchor, None
        return scalar

    @property
    def val(self) -> Val:
        if self._val is None:  # one tensor per Scalar, however many ops read it
            self._val = Val("input", (), ref=f"{self.anchor}.new_full((), float({self.expr}))")
        return self._val


def held(module: Any, target: str, name: str, like: Val) -> Scalar:
    """A float hyperparameter of a torch module (nn.Hardtanh's min_val) read from the model's own module at
    run time: it may come from a constructor argument. The 0-d tensor is built like an input `like` reads."""
    leaf = like
    while leaf.op != "input":
        leaf = leaf.operands()[0]
    return Scalar(float(getattr(module, name)), indexed(f"self.{target}.{name}"), leaf.ref)


def indexed(ref: str) -> str:
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", ref)  # self.layers.0.weight: Sequential's children by index


def c_value(value: Any, operands: list[Any]) -> str:
    """A float in an elementwise template: a literal, or for a Scalar the slot of an operand appended to
    `operands` (the template's operands, in order)."""
    if isinstance(value, Scalar):
        operands.append(value)
        return f"{{{len(operands) - 1}}}"
    return lit(value)


def number(value: Any) -> float:
    """float(value), keeping a Scalar a Scalar (float() would turn it into its traced value)."""
    return value if isinstance(value, Scalar) else float(value)


def lit(value: float) -> str:
    """A float as a C literal."""
    if isinstance(value, Scalar):
        raise Untranslatable(f"a constant of the model ({value.expr}) where a kernel needs a literal")
    value = float(value)
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    if math.isnan(value):
        raise Untranslatable("a NaN constant")
    return f"{value!r}f"


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    import torch

    try:
        return tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError as exc:
        raise Untranslatable(f"shapes do not broadcast: {shapes}") from exc


def ew(template: str, *operands: Val | float) -> Val:
    operands = tuple(o.val if isinstance(o, Scalar) else o for o in operands)
    tensors = [o for o in operands if isinstance(o, Val)]
    if any(t.integer for t in tensors):
        raise Untranslatable("elementwise math on an integer tensor")
    return Val("ew", broadcast(*(t.shape for t in tensors)), tuple(operands), fn=template)


def reduce(x: Val, fn: str, dim: Any, keepdim: bool) -> Val:
    """A reduction over one dim, several or all (None). Adjacent dims reduce in one pass; separate runs
    of dims reduce one run after the other, the last run first so earlier dim numbers stay valid."""
    rank = len(x.shape)
    dims = sorted({d % rank for d in (dim if isinstance(dim, tuple | list) else [dim])}) if dim is not None and rank \
        else list(range(rank))
    if len(dims) == rank:
        shape = (1,) * rank if keepdim else ()
        return Val("reduce", shape, (x,), fn=fn, dim=None, keepdim=keepdim, integer=fn.startswith("arg"))
    runs: list[list[int]] = []
    for d in dims:
        if runs and runs[-1][-1] == d - 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    if len(runs) > 1 and fn not in ("sum", "mean", "max", "min", "prod"):
        raise Untranslatable(f"{fn} over separate dims {dims}")
    for run in reversed(runs):  # mean of means is the mean: every partial mean has the same count
        a, span = run[0], len(run)
        shape = x.shape[:a] + ((1,) * span if keepdim else ()) + x.shape[a + span:]
        x = Val("reduce", shape, (x,), fn=fn, dim=a, span=span, keepdim=keepdim, integer=fn.startswith("arg"))
    return x


def topo(output: Val) -> list[Val]:
    """Every value the output depends on, operands before users, in a deterministic order."""
    order: list[Val] = []
    seen: set[int] = set()

    def visit(v: Val) -> None:
        if id(v) in seen:
            return
        seen.add(id(v))
        for a in v.operands():
            visit(a)
        order.append(v)

    visit(output)
    return order


def outside_inputs(members: list[Val]) -> list[Val]:
    """The values a group of values (a fused kernel) reads from outside itself, in first-use order."""
    inside = {id(m) for m in members}
    return list({id(a): a for m in members for a in m.operands() if id(a) not in inside}.values())
