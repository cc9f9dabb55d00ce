import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """1-D convolution over a sequence followed by tanh-approximated GELU."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.conv(x), approximate="tanh")


batch_size = 32
in_channels = 64
out_channels = 128
length = 8192
kernel_size = 5


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
