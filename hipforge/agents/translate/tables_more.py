"""More of torch's namespace for the translator: norms, logsumexp, products, einsum, attention,
activations without a Tensor method, with the views (views.py) and size arithmetic (sizes.py).
Merged into tables.tables()."""

from __future__ import annotations

import math
from typing import Any

from hipforge.agents.translate import ops
from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_loss import cross_entropy, triplet_margin
from hipforge.agents.translate.hip_norm import dropout, functional_norms
from hipforge.agents.translate.hip_pool import functional_pools
from hipforge.agents.translate.hip_scan import flip, scan
from hipforge.agents.translate.ir import Scalar, Val, number, reduce
from hipforge.agents.translate.sizes import as_number, size, size_tables
from hipforge.agents.translate.views import picker, view_tables


def _prod(x: Val, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Val:
    if dtype is not None:
        raise Untranslatable("prod with a dtype")
    return reduce(x, "prod", dim, keepdim)


def _cumprod(x: Val, dim: int, dtype: Any = None) -> Val:
    if dtype is not None:
        raise Untranslatable("cumprod with a dtype")
    return scan(x, dim, "*")


def triangle(which: str):
    """torch.triu/tril of a matrix product: the GEMM masks its epilogue (in ATen, the same call wraps it)."""
    def lowered(x: Val, diagonal: int = 0) -> Val:
        if x.op != "aten" or x.kind not in ("matmul", "bmm") or "tri" in x.extra:
            raise Untranslatable(f"torch.{which} of something other than a matrix product")
        return Val("aten", x.shape, x.args, fn=f"torch.{which}({x.fn}, {diagonal})", kind=x.kind,
                   extra={**x.extra, "tri": (which, diagonal)})
    return lowered


def einsum(equation: str, *operands: Any) -> Val:
    """The einsum forms that are a matrix product: '...l,lk->...k' (any leading letters) and 'bij,bjk->bik'."""
    from hipforge.agents.translate.tables import _bmm, _matmul

    if len(operands) == 1 and isinstance(operands[0], tuple | list):
        operands = tuple(operands[0])
    terms = equation.replace(" ", "").split("->")
    lhs = terms[0].split(",") if len(terms) == 2 else []
    if len(lhs) == 2 and len(operands) == 2 and len(set(lhs[0])) == len(lhs[0]):
        a, b, out = lhs[0], lhs[1], terms[1]
        if len(b) == 2 and a[-1] == b[0] and b[1] not in a and out == a[:-1] + b[1]:
            return _matmul(*operands)
        if len(a) == len(b) == 3 and a[0] == b[0] and a[2] == b[1] and out == a[:2] + b[2] and len(set(a + b)) == 4:
            return _bmm(*operands)
    raise Untranslatable(f"einsum {equation!r} (only matrix-product forms)")


def attention(q: Val, k: Val, v: Val, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
              scale: float | None = None, enable_gqa: bool = False) -> Val:
    """softmax(q @ k^T * scale) @ v: the two products in ATen, the scaled softmax a HIP row kernel. The
    default scale 1/sqrt(E) is read from q at run time (E changes with the problem size)."""
    from hipforge.agents.translate.tables import _matmul, _transpose

    if attn_mask is not None or dropout_p or is_causal or enable_gqa or q.op != "input":
        raise Untranslatable("scaled_dot_product_attention with a mask, dropout, causality or a computed query")
    default = Val("input", (), ref=f"{q.ref}.new_full((), {q.ref}.shape[-1] ** -0.5)")
    factor = default if scale is None else number(scale)
    scores = _matmul(q, _transpose(k, -2, -1))
    scores.shape = q.shape[:-1] + (k.shape[-2],)
    probs = ops.softmax(ops.binary("mul", scores, factor), -1)
    out = _matmul(probs, v)
    out.shape = q.shape[:-1] + (v.shape[-1],)
    return out


def _sqrt(v: Any) -> Any:
    number = as_number(v)
    if isinstance(number, Scalar):  # math.sqrt(self.head_dim): still the model's, at run time
        return Scalar(math.sqrt(number), f"({number.expr} ** 0.5)", number.anchor)
    return ops.unary("sqrt", number) if isinstance(number, Val) else math.sqrt(number)


def more_tables(known: dict[Any, Any]) -> tuple[dict[Any, Any], dict[str, Any]]:
    import builtins
    import operator

    import torch
    import torch.nn.functional as F

    def un(name: str):
        return lambda x, inplace=False: ops.unary(name, x)

    methods: dict[str, Any] = {
        "size": size, "flip": flip, "cumprod": _cumprod, "prod": _prod,
        "clone": lambda x, memory_format=None: x, "detach": lambda x: x,
        "logsumexp": lambda x, dim, keepdim=False: ops.logsumexp(x, dim, keepdim),
        "norm": lambda x, p="fro", dim=None, keepdim=False, out=None, dtype=None: ops.norm(x, p, dim, keepdim),
        **{name: un(name) for name in ("sign", "log1p", "expm1", "sin", "cos", "reciprocal")},
    }
    functions: dict[Any, Any] = {getattr(torch, name): fn for name, fn in methods.items() if hasattr(torch, name)}
    functions.update({
        F.elu: lambda x, alpha=1.0, inplace=False: ops.elu(x, alpha), torch.selu: un("selu"), F.selu: un("selu"),
        F.hardsigmoid: un("hardsigmoid"), F.softsign: un("softsign"), torch.einsum: einsum,
        F.scaled_dot_product_attention: attention, math.sqrt: _sqrt,
        torch.triu: triangle("triu"), torch.tril: triangle("tril"),
        F.cross_entropy: lambda x, t, weight=None, size_average=None, ignore_index=-100, reduce=None,
        reduction="mean", label_smoothing=0.0: cross_entropy(x, t, weight, size_average, ignore_index, reduce,
                                                             reduction, label_smoothing),
        F.triplet_margin_loss: lambda a, p, n, margin=1.0, p_norm=2.0, eps=1e-6, swap=False, size_average=None,
        reduce=None, reduction="mean": triplet_margin(a, p, n, margin, p_norm, eps, swap, reduction),
        operator.getitem: picker(known[operator.getitem]), builtins.getattr: picker(known[builtins.getattr]),
        **size_tables(known),
        **functional_pools(), **functional_norms(),
        **dict.fromkeys((F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout), dropout),
    })
    view_functions, view_methods = view_tables()
    return {**view_functions, **functions}, {**view_methods, **methods}
