import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalization over the last dimension with a learned affine transform."""

    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 32
seq_len = 512
features = 2048


def get_inputs():
    return [torch.randn(batch_size, seq_len, features) * 2.0 + 0.5]


def get_init_inputs():
    return [features]
