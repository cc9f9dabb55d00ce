import torch
import torch.nn as nn


class Model(nn.Module):
    """L2-normalize each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
