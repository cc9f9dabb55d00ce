import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalization over the last dimension, written out: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, features: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(features) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


batch_size = 32
seq_len = 1024
features = 1024
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [features, eps]
