"""Convolutions in the IR: an ATen call (what fused-around-aten keeps) carrying the spec a HIP kernel needs.

nn.Conv*/nn.ConvTranspose* modules and the functional F.conv*/F.conv_transpose* calls both lower here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val


@dataclass(frozen=True)
class ConvSpec:
    """A convolution's hyperparameters, one entry per spatial dim."""

    transposed: bool
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    output_padding: tuple[int, ...]
    groups: int


def conv_val(x: Val, weight: Val, bias: Val | None, transposed: bool, stride: Any = 1, padding: Any = 0,
             dilation: Any = 1, groups: int = 1, output_padding: Any = 0) -> Val:
    """The conv as an ATen value; `extra["conv"]` holds its spec, or `extra["conv_unsupported"]` why none."""
    if not isinstance(weight, Val) or not isinstance(x, Val):
        raise Untranslatable("a convolution whose input or weight is not a tensor")
    nd = len(weight.shape) - 2
    if len(x.shape) != nd + 2 or not 1 <= nd <= 3:
        raise Untranslatable(f"a convolution of a {len(x.shape)}-d input with a {len(weight.shape)}-d weight")
    operands = (x, weight) + ((bias,) if bias is not None else ())
    bias_arg = "{2}" if bias is not None else "None"
    if transposed:
        call = (f"F.conv_transpose{nd}d({{0}}, {{1}}, {bias_arg}, stride={stride!r}, padding={padding!r}, "
                f"output_padding={output_padding!r}, groups={groups!r}, dilation={dilation!r})")
    else:  # grouped: read off the tensors (depthwise groups follow the channels, which smoke scaling shrinks)
        group_arg = "{0}.shape[1] // {1}.shape[1]" if groups != 1 else "1"
        call = (f"F.conv{nd}d({{0}}, {{1}}, {bias_arg}, stride={stride!r}, padding={padding!r}, "
                f"dilation={dilation!r}, groups={group_arg})")
    out = Val("aten", (), operands, fn=call, kind="conv")
    try:
        out.extra["conv"] = conv_spec(weight, transposed, stride, padding, dilation, groups, output_padding)
    except Untranslatable as exc:  # ATen still runs it; only a HIP kernel of its own is out of reach
        out.extra["conv_unsupported"] = str(exc)
    return out


def conv_spec(weight: Val, transposed: bool, stride: Any, padding: Any, dilation: Any, groups: Any,
              output_padding: Any = 0) -> ConvSpec:
    """The spec of a conv whose weight is `weight`; int or per-dim hyperparameters, as torch takes them."""
    nd = len(weight.shape) - 2
    if isinstance(padding, str):
        if padding != "valid":
            raise Untranslatable(f"unsupported op: a convolution with padding={padding!r}")
        padding = 0

    def count(v: Any) -> bool:  # an int or a model's int attribute (a Size), not a bool
        return isinstance(v, int) and not isinstance(v, bool)

    def per_dim(value: Any, what: str) -> tuple[int, ...]:
        values = (value,) * nd if count(value) else tuple(value)
        if len(values) != nd or not all(count(v) and v >= 0 for v in values):
            raise Untranslatable(f"unsupported op: a convolution with {what}={value!r} for a {nd}-d kernel")
        return tuple(int(v) for v in values)

    if not count(groups) or groups < 1:
        raise Untranslatable(f"unsupported op: a convolution with groups={groups!r}")
    return ConvSpec(transposed, tuple(weight.shape[2:]), per_dim(stride, "stride"), per_dim(padding, "padding"),
                    per_dim(dilation, "dilation"), per_dim(output_padding, "output_padding"), int(groups))
