import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Applies Mish, x * tanh(softplus(x))."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.tanh(F.softplus(x))


batch_size = 4096
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features) * 2.0]


def get_init_inputs():
    return []
