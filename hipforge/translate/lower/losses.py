"""Losses beyond the elementwise ones in ops: cross-entropy (a class index picked inside the row
kernel), triplet margin, and nn loss modules called with several inputs."""

from __future__ import annotations

from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val, c_value, ew, number, reduce
from hipforge.translate.lower import ops

MAX_EXACT_INDEX = 2 ** 24  # class indices travel as float32: exact below this


def cross_entropy(x: Val, target: Val, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                  reduce_: Any = None, reduction: str = "mean", label_smoothing: float = 0.0) -> Val:
    """mean over rows of logsumexp(x_row) - x_row[target_row], for (N, C) logits and (N,) class indices."""
    if weight is not None or size_average is not None or reduce_ is not None or label_smoothing:
        raise Untranslatable("cross_entropy with weights, label smoothing or deprecated arguments")
    if len(x.shape) != 2 or not target.integer or target.shape != x.shape[:1] or x.shape[1] >= MAX_EXACT_INDEX:
        raise Untranslatable(f"cross_entropy of {x.shape} logits and a {target.shape} target (only (N, C) and (N,))")
    if target.op != "input":
        raise Untranslatable("cross_entropy with a computed target")
    rows = (x.shape[0], 1)
    index = Val("input", rows, ref=target.ref)  # the same indices seen as one per row of x
    # log(sum(exp(x - max))) - (x[target] - max), as torch's log_softmax: (max + log(sum)) - x[target]
    # cancels away the low bits of logits near a large common offset
    top = ew("(fabsf({0}) == INFINITY ? 0.0f : {0})", reduce(x, "max", 1, True))
    shifted = ops.binary("sub", x, top)
    total = reduce(ops.unary("exp", shifted), "sum", 1, True)
    # ignore_index: torch drops those rows; with the default -100 no valid class index matches
    picked = Val("ew", x.shape, (shifted, index), fn="((float)j == {1} ? {0} : 0.0f)", extra={"row_index": 1})
    per_row = ops.binary("sub", ops.unary("log", total), reduce(picked, "sum", 1, True))
    if ignore_index >= 0:
        raise Untranslatable("cross_entropy with a non-negative ignore_index")
    return ops.loss(per_row, reduction)


def triplet_margin(anchor: Val, positive: Val, negative: Val, margin: float = 1.0, p: float = 2.0,
                   eps: float = 1e-6, swap: bool = False, reduction: str = "mean") -> Val:
    """mean(max(d(a, p) - d(a, n) + margin, 0)), d the p-norm of x - y + eps over the last dim, as torch."""
    if p != 2.0 or swap:
        raise Untranslatable("triplet_margin_loss with p != 2 or swap")

    def distance(x: Val, y: Val) -> Val:
        diff = ops.binary("add", ops.binary("sub", x, y), number(eps))
        return ops.unary("sqrt", reduce(ops.unary("square", diff), "sum", -1, False))

    gap = ops.binary("sub", distance(anchor, positive), distance(anchor, negative))
    operands = [gap]
    return ops.loss(ew("fmaxf({0} + " + c_value(margin, operands) + ", 0.0f)", *operands), reduction)


def module_loss(module: Any, args: list[Any]) -> Val:
    """An nn loss module called on its inputs: the functional form with the module's settings."""
    import torch.nn as nn

    if isinstance(module, nn.TripletMarginLoss):
        return triplet_margin(*args[:3], module.margin, module.p, module.eps, module.swap, module.reduction)
    if isinstance(module, nn.CrossEntropyLoss):
        if module.weight is not None:
            raise Untranslatable("CrossEntropyLoss with class weights")
        return cross_entropy(args[0], args[1], None, None, module.ignore_index, None, module.reduction,
                             module.label_smoothing)
    if isinstance(module, nn.SmoothL1Loss | nn.HuberLoss):
        beta = module.beta if isinstance(module, nn.SmoothL1Loss) else module.delta
        if isinstance(module, nn.HuberLoss) and beta != 1.0:
            raise Untranslatable("HuberLoss with delta != 1")
        return ops.smooth_l1(args[0], args[1], beta, module.reduction)
    if isinstance(module, nn.MSELoss):
        return ops.loss(ops.unary("square", ops.binary("sub", args[0], args[1])), module.reduction)
    raise KeyError(type(module).__name__)
