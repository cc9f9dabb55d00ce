"""A tiled shared-memory GEMM for single-op matmul / bmm / linear tasks.

C[b] = A[b] @ op(B[b]) (+ bias along N), op(B) = B or B^T (B stored (N, K): nn.Linear's weight,
or `b.T`). A block computes a tile x tile block of C, each thread thread_tile^2 outputs from
registers; shared tiles padded by one column against LDS bank conflicts.
"""

from __future__ import annotations

from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_common import Kernel
from hipforge.agents.translate.ir import Val
from hipforge.agents.translate.params import GenParams

DEVICE = """template <int T, int TT, bool TRANS_B>
__global__ void gemm_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                            float* __restrict__ C, int M, int N, int K, int64_t sA, int64_t sB, int64_t sC) {
    constexpr int S = T / TT;  // threads per block side; each computes TT x TT outputs, S apart
    __shared__ float As[T][T + 1];  // [m][k]
    __shared__ float Bs[T][T + 1];  // TRANS_B ? [n][k] : [k][n]; both read along B's rows (coalesced)
    A += blockIdx.z * sA; B += blockIdx.z * sB; C += blockIdx.z * sC;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * T, col0 = blockIdx.x * T;
    float acc[TT][TT] = {};
    for (int k0 = 0; k0 < K; k0 += T) {
        for (int i = ty; i < T; i += S) {
            for (int j = tx; j < T; j += S) {
                As[i][j] = (row0 + i < M && k0 + j < K) ? A[(int64_t)(row0 + i) * K + k0 + j] : 0.0f;
                if (TRANS_B) Bs[i][j] = (col0 + i < N && k0 + j < K) ? B[(int64_t)(col0 + i) * K + k0 + j] : 0.0f;
                else Bs[i][j] = (k0 + i < K && col0 + j < N) ? B[(int64_t)(k0 + i) * N + col0 + j] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < T; ++kk) {
            float a[TT], b[TT];
#pragma unroll
            for (int r = 0; r < TT; ++r) a[r] = As[ty + r * S][kk];
#pragma unroll
            for (int c = 0; c < TT; ++c) b[c] = TRANS_B ? Bs[tx + c * S][kk] : Bs[kk][tx + c * S];
#pragma unroll
            for (int r = 0; r < TT; ++r)
#pragma unroll
                for (int c = 0; c < TT; ++c) acc[r][c] += a[r] * b[c];
        }
        __syncthreads();
    }
    for (int r = 0; r < TT; ++r) {
        for (int c = 0; c < TT; ++c) {
            const int row = row0 + ty + r * S, col = col0 + tx + c * S;
            if (row < M && col < N) C[(int64_t)row * N + col] = acc[r][c] + (bias ? bias[col] : 0.0f);
        }
    }
}
"""


def gemm_kernel(name: str, out: Val, params: GenParams) -> Kernel:
    a, b, *rest = out.args
    trans_b = out.kind == "linear"
    if b.op == "aten" and b.kind == "view":  # b.T or b.transpose(-2, -1) of an input
        dims = b.extra.get("dims", (0, 1))
        if {d % len(b.shape) for d in dims} != {len(b.shape) - 2, len(b.shape) - 1}:
            raise Untranslatable("a transpose that is not of the last two dims")
        b, trans_b = b.args[0], not trans_b
    if a.op != "input" or b.op != "input":
        raise Untranslatable("a GEMM operand computed inside the model")
    inputs = [a, b] + list(rest)
    batched = out.kind == "bmm"
    if batched and (len(a.shape) != 3 or len(b.shape) not in (2, 3)):
        raise Untranslatable(f"batched matmul of shapes {a.shape} and {b.shape}")
    if out.kind == "matmul" and (len(a.shape) != 2 or len(b.shape) != 2):
        raise Untranslatable(f"matmul of shapes {a.shape} and {b.shape}")
    n_dim = "B.size(-2)" if trans_b else "B.size(-1)"
    if out.kind == "linear":
        sizes = ["const int64_t K = A.size(-1), M = A.numel() / K, N = B.size(0), batch = 1;",
                 "auto shape = A.sizes().vec(); shape.back() = N;"]
    elif batched:
        sizes = [f"const int64_t batch = A.size(0), M = A.size(1), K = A.size(2), N = {n_dim};",
                 "std::vector<int64_t> shape{batch, M, N};"]
    else:
        sizes = [f"const int64_t M = A.size(0), K = A.size(1), N = {n_dim}, batch = 1;",
                 "std::vector<int64_t> shape{M, N};"]
    t, tt = params.tile, params.thread_tile
    signature = ", ".join(f"torch::Tensor {x}" for x in ("a", "b", "bias")[:len(inputs)])
    host = [f"torch::Tensor {name}({signature}) {{",
            "    auto A = a.contiguous(), B = b.contiguous();",
            *(f"    {line}" for line in sizes),
            "    auto C = torch::empty(shape, A.options());",
            "    if (C.numel() == 0) return C;",
            "    const int64_t sB = B.dim() == 3 ? B.size(1) * B.size(2) : 0;",  # a 2-D B is shared by the batch
            f"    const dim3 grid((N + {t - 1}) / {t}, (M + {t - 1}) / {t}, batch), block({t // tt}, {t // tt});",
            *(["    auto Bias = bias.contiguous();"] if rest else []),
            f"    const float* bias_ptr = {'Bias.data_ptr<float>()' if rest else 'nullptr'};",
            f"    gemm_kernel<{t}, {tt}, {str(trans_b).lower()}><<<grid, block>>>(A.data_ptr<float>(), "
            "B.data_ptr<float>(), bias_ptr, C.data_ptr<float>(), "
            "(int)M, (int)N, (int)K, M * K, sB, M * N);",
            "    return C;", "}"]
    return Kernel(name, DEVICE + "\n" + "\n".join(host) + "\n", tuple(inputs))
