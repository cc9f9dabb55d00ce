import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

# A shared-memory tree down to 32 partials, then only lanes 0..31 finish with shuffles:
# on a 64-wide wavefront the other half of warp 0 is already waiting at __syncthreads().
src = r"""
#include <hip/hip_runtime.h>

__global__ void normalize_rows(const float* x, float* out, int cols) {
    __shared__ float s[128];
    __shared__ float total;
    const int tid = threadIdx.x;
    const float* row = x + blockIdx.x * cols;
    float v = row[tid];
    s[tid] = v * v;
    __syncthreads();
    for (int stride = 64; stride >= 32; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {
        float w = s[tid];
        for (int off = 16; off > 0; off >>= 1) w += __shfl_down(w, off);
        if (tid == 0) total = w;
    }
    __syncthreads();
    out[blockIdx.x * cols + tid] = v / (total + 1.0f);
}

torch::Tensor normalize(torch::Tensor x) {
    TORCH_CHECK(x.size(1) == 128, "rows of 128 expected");
    auto out = torch::empty_like(x);
    normalize_rows<<<x.size(0), 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), 128);
    return out;
}
"""

module = load_inline(name="divergent_warp_reduce", cpp_sources=src, functions=["normalize"])


class ModelNew(nn.Module):
    def forward(self, x):
        return module.normalize(x.contiguous())
