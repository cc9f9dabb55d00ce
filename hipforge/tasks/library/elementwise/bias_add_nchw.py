import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds a learned per-channel bias of shape (C, 1, 1) to an (N, C, H, W) tensor."""

    def __init__(self, bias_shape: tuple):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.bias


batch_size = 32
channels = 256
height = 64
width = 64
bias_shape = (channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [bias_shape]
