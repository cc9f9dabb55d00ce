import torch
import torch.nn as nn


class Model(nn.Module):
    """2D convolution followed by ReLU."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return [3, 8, 3]
