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
    """Keeps the convolution in PyTorch and fuses bias + ReLU into one HIP kernel."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        y = torch.nn.functional.conv2d(x, self.conv.weight)
        return elementwise.bias_act(y, self.conv.bias, y.size(2) * y.size(3), 0)
