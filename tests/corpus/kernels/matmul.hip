#include <torch/extension.h>
#include <hip/hip_runtime.h>

// C = A @ B with 16x16 tiles staged through shared memory.
#define TILE 16

__global__ void matmul_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                              int M, int K, int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + tx, kb = t * TILE + ty;
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.f;
        Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

torch::Tensor matmul(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul: (M, K) @ (K, N)");
    auto ac = a.contiguous(), bc = b.contiguous();
    int M = ac.size(0), K = ac.size(1), N = bc.size(1);
    auto c = torch::empty({M, N}, ac.options());
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul_kernel<<<grid, block>>>(ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), M, K, N);
    return c;
}
