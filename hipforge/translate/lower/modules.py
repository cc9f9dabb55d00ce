"""nn.Module calls (fx leaves): activations and norms become IR math, Linear/Conv stay in ATen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.conv_spec import conv_val
from hipforge.translate.ir.sizes import Size
from hipforge.translate.ir.values import Val, held, indexed
from hipforge.translate.lower import ops
from hipforge.translate.lower.norms import group_norm, lower_more

ParamFn = Callable[[str, tuple[int, ...]], Val]


def lower_module(module: Any, target: str, x: Val, param: ParamFn) -> Val:
    import torch.nn as nn

    kind = type(module).__name__
    simple = {"ReLU": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "SiLU": "silu", "Hardswish": "hardswish",
              "Mish": "mish", "ReLU6": "relu6"}
    if kind in simple and type(module).__module__.startswith("torch.nn"):
        return ops.unary(simple[kind], x)
    if isinstance(module, nn.GELU):
        return ops.gelu(x, module.approximate)
    if isinstance(module, nn.LeakyReLU):
        return ops.leaky_relu(x, held(module, target, "negative_slope", x))
    if isinstance(module, nn.Softplus):
        return ops.softplus(x, held(module, target, "beta", x), held(module, target, "threshold", x))
    if isinstance(module, nn.Softmax | nn.LogSoftmax) and module.dim is not None:
        return ops.softmax(x, module.dim, log=isinstance(module, nn.LogSoftmax))
    if isinstance(module, nn.LayerNorm):
        weight, bias = _params(module, target, param)
        return ops.layer_norm(x, module.normalized_shape, weight, bias, module.eps)
    if isinstance(module, nn.GroupNorm):
        weight, bias = _params(module, target, param)
        groups = Size(module.num_groups, indexed(f"self.{target}.num_groups"), ())
        return group_norm(x, groups, weight, bias, module.eps)
    if isinstance(module, nn.Linear):
        return _aten(module, target, x, param, "F.linear({0}, {1}{2})", "linear")
    if isinstance(module, nn.modules.conv._ConvNd) and module.padding_mode == "zeros":
        weight, bias = _params(module, target, param)
        transposed = isinstance(module, nn.modules.conv._ConvTransposeNd)
        return conv_val(x, weight, bias, transposed, module.stride, module.padding, module.dilation, module.groups,
                        module.output_padding if transposed else 0)
    return lower_more(module, target, x, param, _params)


def _params(module: Any, target: str, param: ParamFn) -> tuple[Val | None, Val | None]:
    import torch

    found = []
    for name in ("weight", "bias"):
        tensor = getattr(module, name, None)
        if tensor is not None and tensor.dtype != torch.float32:  # kernels read every tensor as float*
            raise Untranslatable(f"unsupported parameter dtype: {target}.{name} is {tensor.dtype}")
        found.append(param(f"self.{target}.{name}", tuple(tensor.shape)) if tensor is not None else None)
    return found[0], found[1]


def _aten(module: Any, target: str, x: Val, param: ParamFn, call: str, kind: str) -> Val:
    """A heavy op run by PyTorch: the call formats over (input, weight[, bias]) operands."""
    weight, bias = _params(module, target, param)
    if weight is None:
        raise Untranslatable(f"{type(module).__name__} without a weight")
    operands = (x, weight) + ((bias,) if bias is not None else ())
    bias_arg = ", {2}" if bias is not None else ", None"
    return Val("aten", (), operands, fn=call.replace("{2}", bias_arg), kind=kind)
