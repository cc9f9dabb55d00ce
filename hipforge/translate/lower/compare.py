"""Comparisons, torch.where and masked_fill. A mask is computed as exact 0/1 floats inside the fused
kernels; the lowering checks every node against the dtype PyTorch gives it (fx_graph._typed), so a mask
is never returned, summed or added where PyTorch would give a bool or an integer tensor."""

from __future__ import annotations

import operator
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val, ew, number

COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
ALIASES = {"greater": "gt", "less": "lt", "greater_equal": "ge", "less_equal": "le", "not_equal": "ne"}


def mask(op: str, a: Any, b: Any) -> Val:
    if not isinstance(a, Val) and not isinstance(b, Val):
        raise Untranslatable("a comparison of two constants")
    out = ew(f"(({{0}} {op} {{1}}) ? 1.0f : 0.0f)", a, b)
    out.extra["boolean"] = True
    return out


def where(condition: Val, x: Any, y: Any) -> Val:
    """condition ? x : y, elementwise; x and y tensors or float constants."""
    if not isinstance(condition, Val):
        raise Untranslatable("torch.where with a constant condition")
    if not isinstance(x, Val) and not isinstance(y, Val) and not (isinstance(x, float) and isinstance(y, float)):
        raise Untranslatable("torch.where between integer constants (an integer result)")
    return ew("({0} != 0.0f ? {1} : {2})", condition, x, y)


def compare_tables() -> tuple[dict[Any, Any], dict[str, Any]]:
    """(functions by object, Tensor methods by name) for comparisons, where and masked_fill."""
    import torch

    def compare(name: str):
        return lambda a, b: mask(COMPARE[name], a, b)

    methods: dict[str, Any] = {name: compare(name) for name in COMPARE}
    methods.update({alias: compare(name) for alias, name in ALIASES.items()})
    methods["where"] = lambda x, condition, y: where(condition, x, y)  # Tensor.where(condition, other)
    methods["masked_fill"] = lambda x, m, value: where(m, number(value), x)
    functions: dict[Any, Any] = {getattr(operator, name): compare(name) for name in COMPARE}
    functions.update({getattr(torch, name): fn for name, fn in methods.items() if name != "masked_fill"})
    functions[torch.where] = where
    return functions, methods
