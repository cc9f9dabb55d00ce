import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies A by the transpose of B, C = A @ B.T, with B stored row-major as (N, K)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b.T)


m = 2048
k = 4096
n = 2048


def get_inputs():
    return [torch.randn(m, k), torch.randn(n, k)]


def get_init_inputs():
    return []
