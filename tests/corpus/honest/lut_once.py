import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

__global__ void leaky_kernel(const float* __restrict__ x, const float* __restrict__ lut, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * lut[x[i] > 0.f];
}

// {slope, 1}: a constant table built on the first call and read by every later one. It depends on
// the slope only, never on an input.
static torch::Tensor lut;
static double lut_slope = 0.0;

torch::Tensor leaky_relu(torch::Tensor x, double slope) {
    if (!lut.defined() || lut_slope != slope) {
        const float host[2] = {(float)slope, 1.0f};
        lut = torch::empty({2}, x.options());
        hipMemcpy(lut.data_ptr<float>(), host, sizeof host, hipMemcpyHostToDevice);
        lut_slope = slope;
    }
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel();
    leaky_kernel<<<(n + 255) / 256, 256>>>(xc.data_ptr<float>(), lut.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

table = load_inline(name="honest_lut_leaky_relu", cpp_sources=SOURCE, functions=["leaky_relu"], verbose=False)


class ModelNew(nn.Module):
    """LeakyReLU as a multiply by a two-entry table chosen by the sign."""

    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return table.leaky_relu(x, self.negative_slope)
