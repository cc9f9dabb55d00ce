import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps to [lo, hi], multiplies by a scalar and adds a learned per-feature bias."""

    def __init__(self, features: int, lo: float, hi: float, scale: float):
        super().__init__()
        self.lo = lo
        self.hi = hi
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=self.lo, max=self.hi) * self.scale + self.bias


batch_size = 8192
features = 2048
clamp_lo = -1.0
clamp_hi = 1.0
scale = 2.5


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, clamp_lo, clamp_hi, scale]
