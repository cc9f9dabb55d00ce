import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transformer feed-forward block: linear, tanh-GELU, linear, plus the residual input."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.fc1(x), approximate="tanh")
        return self.fc2(h) + x


batch_size = 16
seq_len = 512
d_model = 1024
d_ff = 4096


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, d_ff]
