import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D convolution followed by multiplication with a learned per-channel scale."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, scale_shape: tuple):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.scale = nn.Parameter(torch.rand(scale_shape) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x) * self.scale


batch_size = 16
in_channels = 32
out_channels = 64
depth = 16
height = 64
width = 64
kernel_size = 3
scale_shape = (out_channels, 1, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale_shape]
