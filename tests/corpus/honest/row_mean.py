import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

REDUCTION_SOURCE = r"""{{reduction.hip}}"""

reduction = load_inline(
    name="hipforge_corpus_reduction",
    cpp_sources=REDUCTION_SOURCE,
    functions=["row_reduce", "softmax", "l2_normalize"],
    verbose=False,
)


class ModelNew(nn.Module):
    """Row means in one reduction kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return reduction.row_reduce(x, x.size(-1), 2)
