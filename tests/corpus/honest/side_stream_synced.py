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

// The kernel runs on a stream of its own; the function waits for that stream before it returns,
// so the result is complete when the caller sees it (and inside any timer around the call).
torch::Tensor relu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel();
    hipStream_t stream;
    hipStreamCreate(&stream);
    hipLaunchKernelGGL(relu_kernel, dim3((n + 255) / 256), dim3(256), 0, stream, xc.data_ptr<float>(),
                       y.data_ptr<float>(), n);
    hipStreamSynchronize(stream);
    hipStreamDestroy(stream);
    return y;
}
"""

streamed = load_inline(name="honest_side_stream_relu", cpp_sources=SOURCE, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    """ReLU on a side stream, synchronized before forward returns."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return streamed.relu(x)
