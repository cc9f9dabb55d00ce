import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B"""

    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(67, 45), torch.randn(45, 83)]


def get_init_inputs():
    return []
