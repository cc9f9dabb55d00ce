"""Which torch functions and Tensor methods the translator knows, keyed as fx records them."""

from __future__ import annotations

import builtins
import functools
import operator
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.frontend.trace import scalar_tensor
from hipforge.translate.ir.conv_spec import conv_val
from hipforge.translate.ir.sizes import as_number
from hipforge.translate.ir.values import Scalar, Val, reduce
from hipforge.translate.kernels.scan import scan
from hipforge.translate.lower import ops
from hipforge.translate.lower.compare import compare_tables
from hipforge.translate.lower.products import bmm, linear, matmul, transpose
from hipforge.translate.lower.tables_more import more_tables
from hipforge.translate.lower.views import view


def _extreme(fn: str):
    """torch.max/min: with a dim a (values, indices) pair, without one a full reduction."""
    def lowered(x: Val, dim: Any = None, keepdim: bool = False) -> Any:
        if isinstance(dim, Val):
            return ops.binary("maximum" if fn == "max" else "minimum", x, dim)
        if dim is None:
            return reduce(x, fn, None, False)
        return (reduce(x, fn, dim, keepdim), reduce(x, "arg" + fn, dim, keepdim))
    return lowered


def _pick(pair: Any, key: Any) -> Val:
    if isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Val):
        return pair[{"values": 0, "indices": 1}.get(key, key)]
    if key == "T" and isinstance(pair, Val) and len(pair.shape) == 2:
        return view(pair, pair.shape[::-1], "{0}.T")
    raise KeyError(key)


def _cumsum(x: Val, dim: int, dtype: Any = None) -> Val:
    if dtype is not None:
        raise Untranslatable("cumsum with a dtype")
    return scan(x, dim, "+")


def _scalar_tensor(value: Any, dtype: Any = None, **kwargs: Any) -> Val:
    """torch.tensor(self.scale): the Scalar's own 0-d tensor, built from the model at run time."""
    import torch

    if not isinstance(value, Scalar) or dtype not in (None, torch.float32) or kwargs.get("requires_grad"):
        raise Untranslatable("torch.tensor of a model attribute other than a float32 scalar")
    return value.val


def _reduction(fn: str):
    def lowered(x: Val, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Val:
        if dtype is not None:
            raise Untranslatable("a reduction with a dtype")
        return reduce(x, fn, None if dim == () else dim, keepdim)  # amax's default dim=() means all
    return lowered


def _batch_norm(x, mean, var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if training:
        raise Untranslatable("batch_norm with batch statistics (training=True)")
    return ops.batch_norm_inference(x, mean, var, weight, bias, eps)


def _conv(transposed: bool):
    """F.conv{1,2,3}d and F.conv_transpose{1,2,3}d with torch's positional order (they differ)."""
    if transposed:
        return lambda x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1: conv_val(
            x, weight, bias, True, stride, padding, dilation, groups, output_padding)
    return lambda x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: conv_val(
        x, weight, bias, False, stride, padding, dilation, groups)


def _softmax(log: bool):
    def lowered(x: Val, dim: int, dtype: Any = None, _stacklevel: int = 3) -> Val:
        if dtype is not None:
            raise Untranslatable("softmax with a dtype")
        return ops.softmax(x, dim, log)
    return lowered


@functools.cache
def tables() -> tuple[dict[Any, Any], dict[str, Any]]:
    """(functions by object, Tensor methods by name); built on first use, so importing needs no torch."""
    import torch
    import torch.nn.functional as F

    def un(name: str):
        return lambda x, inplace=False: ops.unary(name, x)  # the output is a new tensor either way

    def bi(name: str):
        return lambda a, b, *, alpha=1.0, rounding_mode=None: (
            ops.binary(name, as_number(a), as_number(b), alpha) if rounding_mode is None else
            _unsupported("rounding_mode"))

    def clamp(x, min=None, max=None):  # noqa: A002  (torch's keyword names)
        return ops.clamp(x, min, max)

    unary = {name: un(name) for name in ops.UNARY if hasattr(torch.Tensor, name)}
    binary = {name: bi(name) for name in ops.BINARY if hasattr(torch.Tensor, name)}
    binary |= {alias: bi(name) for alias, name in
               (("multiply", "mul"), ("subtract", "sub"), ("divide", "div"), ("true_divide", "div"))}
    unary["negative"] = un("neg")
    reductions = {"sum": _reduction("sum"), "mean": _reduction("mean"), "amax": _reduction("max"),
                  "amin": _reduction("min"), "argmax": _reduction("argmax"), "argmin": _reduction("argmin")}
    methods: dict[str, Any] = {**unary, **binary, **reductions, "clamp": clamp, "clip": clamp,
                               "max": _extreme("max"), "min": _extreme("min"), "softmax": _softmax(False),
                               "log_softmax": _softmax(True), "transpose": transpose, "contiguous": lambda x: x,
                               "cumsum": _cumsum}
    functions: dict[Any, Any] = {getattr(torch, name): fn for name, fn in methods.items()
                                 if name not in ("contiguous", "softmax", "log_softmax") and hasattr(torch, name)}
    functions.update({
        torch.softmax: _softmax(False), torch.log_softmax: _softmax(True),
        F.softmax: _softmax(False), F.log_softmax: _softmax(True),
        F.relu: un("relu"), F.sigmoid: un("sigmoid"), F.tanh: un("tanh"), F.silu: un("silu"),
        F.hardswish: un("hardswish"), F.mish: un("mish"), F.relu6: un("relu6"),
        F.gelu: lambda x, approximate="none": ops.gelu(x, approximate),
        F.leaky_relu: lambda x, negative_slope=0.01, inplace=False: ops.leaky_relu(x, negative_slope),
        F.softplus: lambda x, beta=1.0, threshold=20.0: ops.softplus(x, beta, threshold),
        F.hardtanh: lambda x, min_val=-1.0, max_val=1.0, inplace=False: ops.clamp(x, min_val, max_val),
        F.layer_norm: lambda x, shape, weight=None, bias=None, eps=1e-5: ops.layer_norm(x, shape, weight, bias, eps),
        F.batch_norm: _batch_norm,
        F.normalize: lambda x, p=2.0, dim=1, eps=1e-12, out=None: ops.normalize(x, p, dim, eps),
        **{getattr(F, f"conv{n}d"): _conv(False) for n in (1, 2, 3)},
        **{getattr(F, f"conv_transpose{n}d"): _conv(True) for n in (1, 2, 3)},
        F.linear: linear, torch.matmul: matmul, operator.matmul: matmul, torch.bmm: bmm, torch.mm: matmul,
        operator.add: bi("add"), operator.sub: bi("sub"), operator.mul: bi("mul"), operator.truediv: bi("div"),
        operator.pow: bi("pow"), operator.neg: un("neg"), operator.getitem: _pick, builtins.getattr: _pick,
        torch.clip: clamp, scalar_tensor: _scalar_tensor,
        F.cosine_similarity: ops.cosine_similarity, torch.cosine_similarity: ops.cosine_similarity,
        F.mse_loss: lambda x, y, size_average=None, reduce=None, reduction="mean", weight=None: ops.loss(
            ops.unary("square", ops.binary("sub", x, y)), _legacy(size_average, reduce, reduction)),
        F.l1_loss: lambda x, y, size_average=None, reduce=None, reduction="mean": ops.loss(
            ops.unary("abs", ops.binary("sub", x, y)), _legacy(size_average, reduce, reduction)),
        F.kl_div: lambda x, y, size_average=None, reduce=None, reduction="mean", log_target=False: ops.kl_div(
            x, y, _legacy(size_average, reduce, reduction), log_target),
        F.smooth_l1_loss: lambda x, y, size_average=None, reduce=None, reduction="mean", beta=1.0: ops.smooth_l1(
            x, y, beta, _legacy(size_average, reduce, reduction)),
    })
    more_functions, more_methods = more_tables(functions)
    compare_functions, compare_methods = compare_tables()
    return {**functions, **more_functions, **compare_functions}, {**methods, **more_methods, **compare_methods}


def _legacy(size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        raise Untranslatable("the deprecated size_average/reduce arguments")
    return reduction


def _unsupported(what: str) -> Val:
    raise Untranslatable(f"unsupported argument {what}")

