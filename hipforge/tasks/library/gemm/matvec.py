import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product of an (M, K) matrix with a (K, 1) column vector."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, x)


m = 8192
k = 8192


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, 1)]


def get_init_inputs():
    return []
