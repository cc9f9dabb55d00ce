import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matrix multiplication of two 3-D tensors."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


batch_size = 64
m = 512
k = 1024
n = 512


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
