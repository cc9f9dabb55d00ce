"""More of torch's namespace for the translator: norms, logsumexp, einsum, attention and triu/tril (products.py),
activations without a Tensor method, with the views (views.py) and size arithmetic (ir/sizes.py).
Merged into tables.tables()."""

from __future__ import annotations

import math
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.sizes import as_number, size, size_tables
from hipforge.translate.ir.values import Scalar, Val, reduce
from hipforge.translate.kernels.pool import functional_pools
from hipforge.translate.kernels.scan import flip, scan
from hipforge.translate.lower import ops
from hipforge.translate.lower.losses import cross_entropy, triplet_margin
from hipforge.translate.lower.norms import dropout, functional_norms
from hipforge.translate.lower.products import attention, einsum, triangle
from hipforge.translate.lower.views import picker, view_tables


def _prod(x: Val, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Val:
    if dtype is not None:
        raise Untranslatable("prod with a dtype")
    return reduce(x, "prod", dim, keepdim)


def _cumprod(x: Val, dim: int, dtype: Any = None) -> Val:
    if dtype is not None:
        raise Untranslatable("cumprod with a dtype")
    return scan(x, dim, "*")


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
