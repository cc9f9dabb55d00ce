import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalization over the feature dimension followed by a fully connected projection."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.norm = nn.LayerNorm(d_in)
        self.linear = nn.Linear(d_in, d_out)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.norm(x))


batch_size = 16
seq_len = 512
d_in = 1024
d_out = 4096


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_in) * 2.0 + 0.5]


def get_init_inputs():
    return [d_in, d_out]
