import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

src = r"""
#include <hip/hip_runtime.h>
#include <cfloat>

// One block per row; the reduction buffer is dynamic shared memory sized at launch.
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float sdata[];
    const int tid = threadIdx.x;
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;

    float m = -FLT_MAX;
    for (int c = tid; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    sdata[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = fmaxf(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    const float row_max = sdata[0];
    __syncthreads();

    float sum = 0.f;
    for (int c = tid; c < cols; c += blockDim.x) sum += __expf(row[c] - row_max);
    sdata[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    const float inv = 1.0f / sdata[0];
    for (int c = tid; c < cols; c += blockDim.x) out[c] = __expf(row[c] - row_max) * inv;
}

torch::Tensor softmax(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int threads = 128;
    const size_t shmem = threads * sizeof(float);
    softmax_rows<<<xc.size(0), threads, shmem>>>(xc.data_ptr<float>(), y.data_ptr<float>(), xc.size(1));
    return y;
}
"""

module = load_inline(name="softmax_dynamic_smem", cpp_sources=src, functions=["softmax"])


class ModelNew(nn.Module):
    def forward(self, x):
        return module.softmax(x)
