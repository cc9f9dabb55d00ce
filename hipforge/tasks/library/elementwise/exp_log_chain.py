import torch
import torch.nn as nn


class Model(nn.Module):
    """A chain of transcendental ops: log(exp(x - shift) + 1) * exp(-|x|)."""

    def __init__(self, shift: float):
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.exp(x - self.shift)
        y = torch.log(y + 1.0)
        return y * torch.exp(-torch.abs(x))


batch_size = 2048
features = 8192
shift = 0.5


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [shift]
