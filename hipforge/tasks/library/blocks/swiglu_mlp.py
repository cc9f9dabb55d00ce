import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gated MLP (SwiGLU): down(silu(gate(x)) * up(x)), all projections without bias."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


num_tokens = 8192
d_model = 1024
d_ff = 4096


def get_inputs():
    return [torch.randn(num_tokens, d_model)]


def get_init_inputs():
    return [d_model, d_ff]
