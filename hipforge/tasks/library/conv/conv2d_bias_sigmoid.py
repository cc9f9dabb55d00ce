import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution, an extra learned (C, 1, 1) bias, then a scaled sigmoid tail."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple, scale: float
    ):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x) + self.bias
        return torch.sigmoid(x) * self.scale


batch_size = 64
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
bias_shape = (out_channels, 1, 1)
scale = 2.0


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape, scale]
