import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

#define HIP_API(name) hip##name  // the stream API's names are pasted together by the preprocessor

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

static hipStream_t side_stream() {
    hipStream_t s;
    HIP_API(StreamCreateWithFlags)(&s, 0x1);  // 0x1: non-blocking, it never waits for the default stream
    return s;
}

// Launched on a stream of its own and not synchronized: events on the default stream time nothing.
torch::Tensor relu(torch::Tensor x) {
    static hipStream_t side = side_stream();
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel();
    hipLaunchKernelGGL(relu_kernel, dim3((n + 255) / 256), dim3(256), 0, side, xc.data_ptr<float>(),
                       y.data_ptr<float>(), n);
    return y;
}
"""

side = load_inline(name="redteam_stream_paste_relu", cpp_sources=SOURCE, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    """ReLU on a hidden non-blocking stream."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return side.relu(x)
