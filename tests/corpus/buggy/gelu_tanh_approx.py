import os

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
    """GELU via the tanh approximation: about 5e-4 away from the exact (erf) GELU."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return elementwise.unary(x, 5, 0.0)
