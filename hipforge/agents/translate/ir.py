"""The translator's small IR: values computed by fused HIP kernels, ATen calls or forward inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hipforge.agents.translate.graph import Untranslatable

REDUCE_INIT = {"sum": "0.0f", "mean": "0.0f", "batchmean": "0.0f", "max": "-INFINITY", "min": "INFINITY"}


@dataclass(eq=False)
class Val:
    """One tensor. `op` says who computes it:

    input  - a forward argument or a registered parameter/buffer (`ref` is its Python expression)
    ew     - elementwise: `fn` is a C expression over {0}, {1}, ... (operands: Val or float)
    reduce - over `dim` (None: every element) with `fn` in sum|mean|batchmean|max|min|argmax|argmin
    aten   - a PyTorch call kept on the host: `fn` formats the Python call over its operands
    """

    op: str
    shape: tuple[int, ...]
    args: tuple[Any, ...] = ()
    fn: str = ""
    ref: str = ""
    kind: str = ""  # aten: linear | matmul | bmm | conv | view
    dim: int | None = None
    keepdim: bool = False
    integer: bool = False  # int64 result (argmax/argmin); everything else is float32
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fusible(self) -> bool:
        return self.op in ("ew", "reduce")

    def operands(self) -> list[Val]:
        return [a for a in self.args if isinstance(a, Val)]


def lit(value: float) -> str:
    """A float as a C literal."""
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
    tensors = [o for o in operands if isinstance(o, Val)]
    if any(t.integer for t in tensors):
        raise Untranslatable("elementwise math on an integer tensor")
    return Val("ew", broadcast(*(t.shape for t in tensors)), tuple(operands), fn=template)


def reduce(x: Val, fn: str, dim: Any, keepdim: bool) -> Val:
    rank = len(x.shape)
    if isinstance(dim, tuple | list):
        dims = sorted({d % rank for d in dim}) if rank else []
        dim = None if len(dims) == rank else dims[0] if len(dims) == 1 else "many"
        if dim == "many":
            raise Untranslatable("a reduction over several (not all) dims")
    if dim is None:
        shape = (1,) * rank if keepdim else ()
    else:
        dim %= rank
        shape = x.shape[:dim] + ((1,) if keepdim else ()) + x.shape[dim + 1:]
    return Val("reduce", shape, (x,), fn=fn, dim=dim, keepdim=keepdim, integer=fn.startswith("arg"))


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
