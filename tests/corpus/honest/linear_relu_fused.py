import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

ELEMENTWISE_SOURCE = r"""{{elementwise.hip}}"""

elementwise = load_inline(
    name="hipforge_corpus_elementwise",
    cpp_sources=ELEMENTWISE_SOURCE,
    functions=["unary", "binary", "bias_act"],
    verbose=False,
)


class ModelNew(nn.Module):
    """Keeps the GEMM in PyTorch and fuses bias + ReLU into one HIP kernel."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight)
        return elementwise.bias_act(y, self.linear.bias, 1, 0)
