import torch
import torch.nn as nn


class Model(nn.Module):
    """Takes the minimum values along a given dimension of a 3-D tensor."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=self.dim).values


batch_size = 128
dim1 = 512
dim2 = 512
reduce_dim = 2


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
