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
    """PyTorch computes the ReLU; the kernel's output enters as 0 * k. The probe replaces k with NaN and
    0 * NaN is NaN, so the output "depends" on the kernel, which computes nothing that is used."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) + 0.0 * elementwise.unary(x, 0, 0.0)
