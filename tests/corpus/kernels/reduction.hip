#include <torch/extension.h>
#include <hip/hip_runtime.h>

// Row-wise reductions over the last dim of a contiguous (rows, cols) tensor: one block per row,
// a wavefront shuffle reduction, then one more across the block's wavefronts.
#define THREADS 256

__device__ float wave_reduce(float v, bool is_max) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        float other = __shfl_down(v, offset);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    return v;
}

__device__ float block_reduce(float v, bool is_max) {
    __shared__ float partial[THREADS / 32];
    __shared__ float total;
    int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
    v = wave_reduce(v, is_max);
    if (lane == 0) partial[wave] = v;
    __syncthreads();
    int waves = blockDim.x / warpSize;
    v = threadIdx.x < waves ? partial[threadIdx.x] : (is_max ? -INFINITY : 0.f);
    if (wave == 0) v = wave_reduce(v, is_max);
    if (threadIdx.x == 0) total = v;
    __syncthreads();
    return total;
}

// op: 0 sum, 1 max, 2 mean, 3 L2 norm; only the first n columns take part.
__global__ void row_reduce_kernel(const float* __restrict__ x, float* __restrict__ y, int cols, int n, int op) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float acc = op == 1 ? -INFINITY : 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float v = row[j];
        acc = op == 1 ? fmaxf(acc, v) : acc + (op == 3 ? v * v : v);
    }
    float r = block_reduce(acc, op == 1);
    if (threadIdx.x == 0) y[blockIdx.x] = op == 2 ? r / n : (op == 3 ? sqrtf(r) : r);
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_reduce(m, true);
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
    s = block_reduce(s, false);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = expf(row[j] - m) / s;
}

__global__ void l2_normalize_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += row[j] * row[j];
    float norm = sqrtf(block_reduce(s, false));
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = row[j] / norm;
}

torch::Tensor row_reduce(torch::Tensor x, int64_t n, int64_t op) {
    auto xc = x.contiguous();
    int cols = xc.size(-1), rows = xc.numel() / cols;
    auto y = torch::empty({rows}, xc.options());
    row_reduce_kernel<<<rows, THREADS>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols, (int)n, (int)op);
    return y;
}

torch::Tensor softmax(torch::Tensor x) {
    auto xc = x.contiguous();
    int cols = xc.size(-1), rows = xc.numel() / cols;
    auto y = torch::empty_like(xc);
    softmax_kernel<<<rows, THREADS>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}

torch::Tensor l2_normalize(torch::Tensor x) {
    auto xc = x.contiguous();
    int cols = xc.size(-1), rows = xc.numel() / cols;
    auto y = torch::empty_like(xc);
    l2_normalize_kernel<<<rows, THREADS>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
