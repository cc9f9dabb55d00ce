import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize(bn: nn.BatchNorm2d) -> None:
    with torch.no_grad():
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)


class Model(nn.Module):
    """ResNet basic block in inference mode: conv-BN-ReLU, conv-BN, identity shortcut, ReLU."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        padding = kernel_size // 2
        self.conv1 = nn.Conv2d(channels, channels, kernel_size, padding=padding, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size, padding=padding, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        _randomize(self.bn1)
        _randomize(self.bn2)

    @staticmethod
    def _bn(x: torch.Tensor, bn: nn.BatchNorm2d) -> torch.Tensor:
        return F.batch_norm(
            x, bn.running_mean, bn.running_var, bn.weight, bn.bias, training=False, eps=bn.eps
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self._bn(self.conv1(x), self.bn1))
        out = self._bn(self.conv2(out), self.bn2)
        return torch.relu(out + x)


batch_size = 32
channels = 64
height = 64
width = 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
