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
    """PyTorch computes the softmax; the "kernel" multiplies it by 1.0, a copy that passes the NaN probe."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return elementwise.unary(torch.softmax(x, dim=1), 7, 1.0)
