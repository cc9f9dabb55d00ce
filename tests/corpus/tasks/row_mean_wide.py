import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean over a wide last dim: rounding errors of single elements average out."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mean(x, dim=1)


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
