import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Applies Softplus, log(1 + exp(beta * x)) / beta, linear above a threshold."""

    def __init__(self, beta: float, threshold: float):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


batch_size = 4096
features = 8192
beta = 2.0
threshold = 20.0


def get_inputs():
    return [torch.randn(batch_size, features) * 5.0]


def get_init_inputs():
    return [beta, threshold]
