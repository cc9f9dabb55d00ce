import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

SOURCE = r"""{{matmul_tf32.hip}}"""

tf32 = load_inline(name="hipforge_corpus_matmul_tf32", cpp_sources=SOURCE, functions=["matmul_tf32", "matmul_tf32x3"],
                   verbose=False)


class ModelNew(nn.Module):
    """Matrix multiplication at TF32 precision, as a tensor core without the split reads fp32 operands."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return tf32.matmul_tf32(A, B)
