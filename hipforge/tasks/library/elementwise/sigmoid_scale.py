import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled swish gate: x * sigmoid(beta * x) * scale."""

    def __init__(self, beta: float, scale: float):
        super().__init__()
        self.beta = beta
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.beta * x) * self.scale


batch_size = 128
seq_len = 1024
hidden = 256
beta = 1.702
scale = 1.5


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [beta, scale]
