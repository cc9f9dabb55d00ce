import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

# Does not compile: `scale_factor` is never declared.
src = r"""
#include <hip/hip_runtime.h>

__global__ void scale(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * scale_factor;
}

torch::Tensor twice(torch::Tensor x) {
    auto out = torch::empty_like(x);
    scale<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());
    return out;
}
"""

module = load_inline(name="compile_error", cpp_sources=src, functions=["twice"])


class ModelNew(nn.Module):
    def forward(self, x):
        return module.twice(x)
