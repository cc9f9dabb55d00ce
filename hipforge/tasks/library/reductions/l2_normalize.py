import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales each row to unit L2 norm, written out with a small epsilon."""

    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.sqrt(torch.sum(x * x, dim=1, keepdim=True))
        return x / (norm + self.eps)


batch_size = 8192
features = 4096
eps = 1e-8


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [eps]
