import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LeakyReLU with a configurable slope."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [0.1]
