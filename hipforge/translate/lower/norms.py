"""nn modules beyond activations and heavy ops: batch/instance/group norm (train or eval semantics, as the
module is), pooling, global average pooling, hardtanh/ELU-style activations, dropout that does nothing; the
functional forms of the norms and of global pooling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.sizes import render
from hipforge.translate.ir.values import Val, held, reduce
from hipforge.translate.kernels.pool import pool
from hipforge.translate.lower import ops

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
        return global_avg_pool(x, int(type(module).__name__[-2]), module.output_size)
    if isinstance(module, nn.Hardtanh):
        return ops.clamp(x, held(module, target, "min_val", x), held(module, target, "max_val", x))
    if isinstance(module, nn.ELU):
        return ops.elu(x, held(module, target, "alpha", x))
    if isinstance(module, nn.Hardsigmoid | nn.SELU | nn.Softsign | nn.Identity):
        return x if isinstance(module, nn.Identity) else ops.unary(type(module).__name__.lower(), x)
    if isinstance(module, nn.modules.dropout._DropoutNd):
        return dropout(x, module.p, module.training)
    raise KeyError(type(module).__name__)


def global_avg_pool(x: Val, n: int, output_size: Any) -> Val:
    """Adaptive average pooling over the last n dims to size 1 (module or function); other sizes decline."""
    size = output_size if isinstance(output_size, tuple | list) else (output_size,) * n
    if len(size) != n or any(s != 1 for s in size):
        raise Untranslatable(f"adaptive average pooling to {output_size} (only global pooling)")
    return reduce(x, "mean", tuple(range(len(x.shape) - n, len(x.shape))), True)


def group_norm(x: Val, groups: int, weight: Val | None, bias: Val | None, eps: float) -> Val:
    """Rows of (N, G, C/G * spatial) normalized by a row kernel (reshapes are free views), then the
    per-channel affine as elementwise work that fuses with whatever follows."""
    import math

    sources = [x]
    count = render([groups], sources)[0]  # self.norm.num_groups: the model's, which an init argument may set
    if len(sources) > 1:  # read from another tensor's shape: its value here
        count = repr(int(groups))
    rows = Val("aten", (x.shape[0], int(groups), math.prod(x.shape[1:]) // groups), (x,),
               fn=f"{{0}}.reshape({{0}}.shape[0], {count}, -1)", kind="view")
    normed = ops.layer_norm(rows, (rows.shape[-1],), None, None, eps)
    y = Val("aten", x.shape, (normed, x), fn="{0}.reshape({1}.shape)", kind="view")
    channel = (x.shape[1],) + (1,) * (len(x.shape) - 2)
    y = ops.binary("mul", y, ops.as_shape(weight, channel)) if weight is not None else y
    return ops.binary("add", y, ops.as_shape(bias, channel)) if bias is not None else y


def functional_norms() -> dict[Any, Any]:
    """F.group_norm, F.instance_norm (batch statistics) and F.adaptive_avg_pool{1,2,3}d to size 1."""
    import torch.nn.functional as F

    def instance_norm(x: Val, running_mean: Any = None, running_var: Any = None, weight: Val | None = None,
                      bias: Val | None = None, use_input_stats: bool = True, momentum: float = 0.1,
                      eps: float = 1e-5) -> Val:
        if not use_input_stats:
            raise Untranslatable("instance_norm with running statistics (use_input_stats=False)")
        return ops.normalize_over(x, _stats_dims(x, 2), weight, bias, eps)

    def adaptive(n: int):  # noqa: ANN202
        return lambda x, output_size: global_avg_pool(x, n, output_size)

    return {F.group_norm: lambda x, num_groups, weight=None, bias=None, eps=1e-5: group_norm(
                x, num_groups, weight, bias, eps),
            F.instance_norm: instance_norm,
            **{getattr(F, f"adaptive_avg_pool{n}d"): adaptive(n) for n in (1, 2, 3)}}


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
