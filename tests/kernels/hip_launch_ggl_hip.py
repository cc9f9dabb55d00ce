import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

src = r"""
#include <hip/hip_runtime.h>
#include <torch/extension.h>

template <typename scalar_t>
__device__ __forceinline__ scalar_t silu(scalar_t v) { return v / (scalar_t(1) + expf(-v)); }

template <typename scalar_t>
__global__ void silu_bias_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ bias,
                                 scalar_t* __restrict__ y, int rows, int cols) {
    const int r = blockIdx.y;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
        y[r * cols + c] = silu(x[r * cols + c]) + bias[c];
}

torch::Tensor silu_bias(torch::Tensor x, torch::Tensor bias) {
    auto y = torch::empty_like(x);
    const int rows = x.size(0), cols = x.size(1);
    dim3 block(64);
    dim3 grid(2, rows);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(silu_bias_kernel<float>), grid, block, 0, 0,
                       x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    C10_HIP_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

module = load_inline(name="hip_launch_ggl", cpp_sources=src, functions={"silu_bias": "x * sigmoid(x) + bias"})


class ModelNew(nn.Module):
    def __init__(self, cols: int = 300):
        super().__init__()
        self.bias = nn.Parameter(torch.linspace(-1, 1, cols))

    def forward(self, x):
        return module.silu_bias(x.contiguous(), self.bias)
