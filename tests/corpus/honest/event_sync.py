import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

// Launch on the default stream, then wait for an event recorded behind the kernel on that stream.
torch::Tensor relu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel();
    hipLaunchKernelGGL(relu_kernel, dim3((n + 255) / 256), dim3(256), 0, 0, xc.data_ptr<float>(),
                       y.data_ptr<float>(), n);
    hipEvent_t done;
    hipEventCreate(&done);
    hipEventRecord(done, 0);
    hipEventSynchronize(done);
    hipEventDestroy(done);
    return y;
}
"""

synced = load_inline(name="honest_event_sync_relu", cpp_sources=SOURCE, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    """ReLU that synchronizes on a hipEvent it records on the default stream."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return synced.relu(x)
