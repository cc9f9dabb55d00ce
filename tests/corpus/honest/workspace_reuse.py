import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

// Two passes: per-chunk partial sums into a scratch buffer, then one sum per row from those.
__global__ void partial_kernel(const float* __restrict__ x, float* __restrict__ ws, int cols, int chunk, int parts) {
    int row = blockIdx.x, part = threadIdx.x;
    if (part >= parts) return;
    float s = 0.f;
    for (int j = part * chunk; j < min(cols, (part + 1) * chunk); ++j) s += x[(size_t)row * cols + j];
    ws[row * parts + part] = s;
}

__global__ void finish_kernel(const float* __restrict__ ws, float* __restrict__ y, int rows, int parts) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float s = 0.f;
    for (int p = 0; p < parts; ++p) s += ws[row * parts + p];
    y[row] = s;
}

torch::Tensor partial_sums(torch::Tensor x, torch::Tensor ws, int64_t parts) {
    int cols = x.size(1), rows = x.size(0), chunk = (cols + parts - 1) / parts;
    partial_kernel<<<rows, 64>>>(x.data_ptr<float>(), ws.data_ptr<float>(), cols, chunk, (int)parts);
    return ws;
}

torch::Tensor finish(torch::Tensor ws, int64_t rows, int64_t parts) {
    auto y = torch::empty({rows}, ws.options());
    finish_kernel<<<(rows + 63) / 64, 64>>>(ws.data_ptr<float>(), y.data_ptr<float>(), (int)rows, (int)parts);
    return y;
}
"""

two_pass = load_inline(name="honest_workspace_row_sum", cpp_sources=SOURCE, functions=["partial_sums", "finish"],
                       verbose=False)
PARTS = 4


class ModelNew(nn.Module):
    """Row sums through a scratch buffer that is allocated once and reused by every call: it holds
    partial sums of the current input only, never a result."""

    def __init__(self):
        super().__init__()
        self.workspace = None

    def forward(self, x):
        x = x.contiguous()
        if self.workspace is None or self.workspace.numel() != x.size(0) * PARTS:
            self.workspace = torch.empty(x.size(0) * PARTS, device=x.device, dtype=x.dtype)
        two_pass.partial_sums(x, self.workspace, PARTS)
        return two_pass.finish(self.workspace, x.size(0), PARTS)
