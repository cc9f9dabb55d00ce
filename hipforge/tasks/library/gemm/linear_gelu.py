import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Fully connected layer followed by tanh-approximated GELU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x), approximate="tanh")


batch_size = 2048
in_features = 1024
out_features = 4096


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
