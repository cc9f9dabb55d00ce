#include <torch/extension.h>
#include <hip/hip_runtime.h>

// A float rounded to TF32 as a tensor core reads it (10 mantissa bits, nearest even), in bit operations.
__device__ __forceinline__ float to_tf32(float v) {
    unsigned u = __float_as_uint(v);
    if ((u & 0x7f800000u) == 0x7f800000u) return v;  // inf and NaN stay
    return __uint_as_float((u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu);
}

// C = A @ B, one thread per output, each product taken as a tensor core would: SPLIT false, one TF32 product
// (a precision downgrade); SPLIT true, three (x = hi + lo, both TF32: lo*hi + hi*lo + hi*hi, as gemm_mma.py).
// TF32 products are exact in fp32 (11 x 11 significant bits), so only the sums round, as on the tensor cores.
template <bool SPLIT>
__global__ void matmul_tf32_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   int M, int K, int N) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        const float a = A[(int64_t)i * K + k], b = B[(int64_t)k * N + j];
        const float ah = to_tf32(a), bh = to_tf32(b);
        if (SPLIT) {
            acc += to_tf32(a - ah) * bh;
            acc += ah * to_tf32(b - bh);
        }
        acc += ah * bh;
    }
    C[(int64_t)i * N + j] = acc;
}

template <bool SPLIT>
torch::Tensor launch(torch::Tensor a, torch::Tensor b) {
    auto A = a.contiguous(), B = b.contiguous();
    const int M = A.size(0), K = A.size(1), N = B.size(1);
    auto C = torch::empty({M, N}, A.options());
    const dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    matmul_tf32_kernel<SPLIT><<<grid, block>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, K, N);
    return C;
}

torch::Tensor matmul_tf32(torch::Tensor a, torch::Tensor b) { return launch<false>(a, b); }
torch::Tensor matmul_tf32x3(torch::Tensor a, torch::Tensor b) { return launch<true>(a, b); }
