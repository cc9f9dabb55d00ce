import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Applies LeakyReLU with a configurable negative slope."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 8192
features = 4096
negative_slope = 0.05


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [negative_slope]
