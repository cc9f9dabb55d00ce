"""nn modules beyond activations and heavy ops: batch/instance norm (train or eval semantics, as the
module is), pooling, global average pooling, hardtanh/ELU-style activations, dropout that does nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hipforge.agents.translate import ops
from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_pool import pool
from hipforge.agents.translate.ir import Val, reduce

ParamFn = Callable[[str, tuple[int, ...]], Val]


def lower_more(module: Any, target: str, x: Val, param: ParamFn, params: Callable) -> Val:
    """Raises KeyError for a module it does not know (the caller names it in the decline)."""
    import torch.nn as nn

    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        return _batch_norm(module, target, x, param, params)
    if isinstance(module, nn.modules.instancenorm._InstanceNorm):
        return _instance_norm(module, target, x, param, params)
    if isinstance(module, nn.MaxPool1d | nn.MaxPool2d | nn.MaxPool3d | nn.AvgPool1d | nn.AvgPool2d | nn.AvgPool3d):
        return pool(module, x)
    if isinstance(module, nn.AdaptiveAvgPool1d | nn.AdaptiveAvgPool2d | nn.AdaptiveAvgPool3d):
        n = int(type(module).__name__[-2])
        size = module.output_size if isinstance(module.output_size, tuple | list) else (module.output_size,) * n
        if any(s != 1 for s in size):
            raise Untranslatable(f"{type(module).__name__} to {module.output_size} (only global pooling)")
        return reduce(x, "mean", tuple(range(len(x.shape) - n, len(x.shape))), True)
    if isinstance(module, nn.Hardtanh):
        return ops.clamp(x, module.min_val, module.max_val)
    if isinstance(module, nn.ELU):
        return ops.elu(x, module.alpha)
    if isinstance(module, nn.Hardsigmoid | nn.SELU | nn.Softsign | nn.Identity):
        return x if isinstance(module, nn.Identity) else ops.unary(type(module).__name__.lower(), x)
    if isinstance(module, nn.modules.dropout._DropoutNd):
        return dropout(x, module.p, module.training)
    raise KeyError(type(module).__name__)


def dropout(x: Val, p: float = 0.5, training: bool = True, inplace: bool = False) -> Val:
    """Dropout that does nothing (eval mode, or p = 0), as module or function; random dropout no kernel matches."""
    if training and p:
        raise Untranslatable(f"dropout with p={p} in training mode")
    return x


def _stats_dims(x: Val, first: int) -> tuple[int, ...]:
    return tuple(range(first, len(x.shape)))


def _batch_norm(module: Any, target: str, x: Val, param: ParamFn, params: Callable) -> Val:
    weight, bias = params(module, target, param)
    if module.training or module.running_mean is None:  # batch statistics, what a train-mode module uses
        dims = (0, *_stats_dims(x, 2))
        return ops.normalize_over(x, dims, weight, bias, module.eps)
    channel = (x.shape[1],)
    mean = param(f"self.{target}.running_mean", channel)
    var = param(f"self.{target}.running_var", channel)
    return ops.batch_norm_inference(x, mean, var, weight, bias, module.eps)


def _instance_norm(module: Any, target: str, x: Val, param: ParamFn, params: Callable) -> Val:
    if module.track_running_stats and not module.training:
        raise Untranslatable("InstanceNorm with running statistics in eval mode")
    weight, bias = params(module, target, param)
    return ops.normalize_over(x, _stats_dims(x, 2), weight, bias, module.eps)
