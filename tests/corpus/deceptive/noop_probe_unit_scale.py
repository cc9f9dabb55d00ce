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
    """PyTorch computes the sigmoid and multiplies it by a one-element kernel result that is always 1.0:
    NaN in place of that 1.0 spoils the output, so the probe credits the kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        one = elementwise.unary(x.new_ones(1), 7, 1.0)
        return torch.sigmoid(x) * one
