import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <thread>
#include <vector>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

// The range is split over a few host threads, each launching the kernel on its slice; all of them
// are joined (and the device synchronized) before the function returns.
torch::Tensor relu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    int n = xc.numel(), workers = 4, slice = (n + workers - 1) / workers;
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w) {
        int begin = w * slice, count = std::min(n, begin + slice) - begin;
        if (count <= 0) break;
        pool.emplace_back([=] {
            hipLaunchKernelGGL(relu_kernel, dim3((count + 255) / 256), dim3(256), 0, 0, in + begin, out + begin,
                               count);
            hipDeviceSynchronize();
        });
    }
    for (auto& t : pool) t.join();
    return y;
}
"""

pooled = load_inline(name="honest_thread_pool_relu", cpp_sources=SOURCE, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    """ReLU launched from a host thread pool that is joined before forward returns."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return pooled.relu(x)
