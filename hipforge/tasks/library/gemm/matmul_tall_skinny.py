import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies a tall, skinny matrix (M >> K) by a small square-ish matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


m = 65536
k = 256
n = 256


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
