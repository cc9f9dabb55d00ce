"""A tiled shared-memory GEMM for single-op matmul / bmm / linear tasks.

C[b] = op(A[b]) @ op(B[b]) (+ bias along N), op(X) = X or X^T (B stored (N, K): nn.Linear's weight,
or `b.T`; A stored (K, M): `a.T`); triu/tril of the product masks the epilogue.
A block computes a tile x tile block of C, each thread thread_tile^2 outputs from
registers; shared tiles padded by one column against LDS bank conflicts. Each K-tile's products are
summed into a partial before joining the running total: blocked summation, so rounding grows with
K / tile rather than K (KernelBench L1/4's K = 2^20 broke atol = rtol = 1e-4 with one running sum).
A matrix-vector product (N == 1, or M == 1 against a (N, K) B) takes gemv.py's kernel at run time.
"""

from __future__ import annotations

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val
from hipforge.translate.kernels.common import Kernel
from hipforge.translate.kernels.gemv import DEVICE as GEMV_DEVICE
from hipforge.translate.kernels.gemv import gemv_branches
from hipforge.translate.params import GenParams

DEVICE = """template <int T, int TT, bool TRANS_A, bool TRANS_B, int TRI>
__global__ void gemm_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                            float* __restrict__ C, int M, int N, int K, int64_t sA, int64_t sB, int64_t sC,
                            int diag) {
    constexpr int S = T / TT;  // threads per block side; each computes TT x TT outputs, S apart
    __shared__ float As[T][T + 1];  // [m][k]
    __shared__ float Bs[T][T + 1];  // TRANS_B ? [n][k] : [k][n]; both read along B's rows (coalesced)
    A += blockIdx.y * sA; B += blockIdx.y * sB; C += blockIdx.y * sC;
    const int tx = threadIdx.x, ty = threadIdx.y;
    // tiles of C along grid.x (up to 2^31 - 1 blocks; grid.y/z stop at 65535), the batch along grid.y
    const int tiles_n = (N + T - 1) / T;
    const int row0 = (blockIdx.x / tiles_n) * T, col0 = (blockIdx.x % tiles_n) * T;
    float acc[TT][TT] = {};
    for (int k0 = 0; k0 < K; k0 += T) {
        for (int i = ty; i < T; i += S) {
            for (int j = tx; j < T; j += S) {
                if (TRANS_A) As[j][i] = (k0 + i < K && row0 + j < M) ? A[(int64_t)(k0 + i) * M + row0 + j] : 0.0f;
                else As[i][j] = (row0 + i < M && k0 + j < K) ? A[(int64_t)(row0 + i) * K + k0 + j] : 0.0f;
                if (TRANS_B) Bs[i][j] = (col0 + i < N && k0 + j < K) ? B[(int64_t)(col0 + i) * K + k0 + j] : 0.0f;
                else Bs[i][j] = (k0 + i < K && col0 + j < N) ? B[(int64_t)(k0 + i) * N + col0 + j] : 0.0f;
            }
        }
        __syncthreads();
        float part[TT][TT] = {};  // this K-tile's sums: the running total sees one add per tile
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
                for (int c = 0; c < TT; ++c) part[r][c] += a[r] * b[c];
        }
#pragma unroll
        for (int r = 0; r < TT; ++r)
#pragma unroll
            for (int c = 0; c < TT; ++c) acc[r][c] += part[r][c];
        __syncthreads();
    }
    for (int r = 0; r < TT; ++r) {
        for (int c = 0; c < TT; ++c) {
            const int row = row0 + ty + r * S, col = col0 + tx + c * S;
            const bool kept = TRI == 0 || (TRI == 1 ? col - row >= diag : col - row <= diag);  // triu / tril
            if (row < M && col < N) C[(int64_t)row * N + col] = kept ? acc[r][c] + (bias ? bias[col] : 0.0f) : 0.0f;
        }
    }
}
"""


def gemm_kernel(name: str, out: Val, params: GenParams) -> Kernel:
    a, b, *rest = out.args
    a, trans_a = _untransposed(a, False)
    b, trans_b = _untransposed(b, out.kind == "linear")
    if a.op != "input" or b.op != "input":
        raise Untranslatable("a GEMM operand computed inside the model")
    inputs = [a, b] + list(rest)
    batched = out.kind == "bmm" and len(b.shape) != 2  # A (..., K) against one B (K, N) is a flat matmul
    if batched and (len(a.shape) != 3 or len(b.shape) != 3 or trans_a):
        raise Untranslatable(f"batched matmul of shapes {a.shape} and {b.shape}")
    if not batched and (len(a.shape) < 2 or len(b.shape) != 2 or (trans_a and len(a.shape) != 2)):
        raise Untranslatable(f"matmul of shapes {a.shape} and {b.shape}")
    n_dim = "B.size(-2)" if trans_b else "B.size(-1)"
    if out.kind == "linear" or (not batched and len(a.shape) > 2):  # every leading dim of A against one B
        sizes = [f"const int64_t K = A.size(-1), M = A.numel() / K, N = {n_dim}, batch = 1;",
                 "auto shape = A.sizes().vec(); shape.back() = N;"]
    elif trans_a:
        sizes = [f"const int64_t K = A.size(0), M = A.size(1), N = {n_dim}, batch = 1;",
                 "std::vector<int64_t> shape{M, N};"]
    elif batched:
        sizes = [f"const int64_t batch = A.size(0), M = A.size(1), K = A.size(2), N = {n_dim};",
                 "std::vector<int64_t> shape{batch, M, N};"]
    else:
        sizes = [f"const int64_t M = A.size(0), K = A.size(1), N = {n_dim}, batch = 1;",
                 "std::vector<int64_t> shape{M, N};"]
    t, tt = params.tile, params.thread_tile
    tri, diag = {"triu": 1, "tril": 2}.get(out.extra.get("tri", ("", 0))[0], 0), out.extra.get("tri", ("", 0))[1]
    signature = ", ".join(f"torch::Tensor {x}" for x in ("a", "b", "bias")[:len(inputs)])
    host = [f"torch::Tensor {name}({signature}) {{",
            "    auto A = a.contiguous(), B = b.contiguous();",
            *(f"    {line}" for line in sizes),
            "    auto C = torch::empty(shape, A.options());",
            "    if (C.numel() == 0) return C;",
            "    const int64_t sB = B.dim() == 3 ? B.size(1) * B.size(2) : 0;",  # a 2-D B is shared by the batch
            f"    const dim3 grid((unsigned)(((N + {t - 1}) / {t}) * ((M + {t - 1}) / {t})), (unsigned)batch), "
            f"block({t // tt}, {t // tt});",
            *(["    auto Bias = bias.contiguous();"] if rest else []),
            f"    const float* bias_ptr = {'Bias.data_ptr<float>()' if rest else 'nullptr'};",
            *([] if batched or tri else gemv_branches(trans_a, trans_b, params)),
            f"    gemm_kernel<{t}, {tt}, {str(trans_a).lower()}, {str(trans_b).lower()}, {tri}><<<grid, block>>>("
            "A.data_ptr<float>(), B.data_ptr<float>(), bias_ptr, C.data_ptr<float>(), "
            f"(int)M, (int)N, (int)K, M * K, sB, M * N, {diag});",
            "    return C;", "}"]
    gemv = "" if batched or tri else GEMV_DEVICE + "\n"
    return Kernel(name, DEVICE + "\n" + gemv + "\n".join(host) + "\n", tuple(inputs))


def _untransposed(x: Val, transposed: bool) -> tuple[Val, bool]:
    """An operand seen through x.T / x.transpose(-2, -1) of an input: the input, with the flag flipped."""
    if x.op == "aten" and x.kind == "view" and ("dims" in x.extra or x.fn == "{0}.T"):
        dims = x.extra.get("dims", (0, 1))
        if {d % len(x.shape) for d in dims} != {len(x.shape) - 2, len(x.shape) - 1}:
            raise Untranslatable("a transpose that is not of the last two dims")
        return x.args[0], not transposed
    return x, transposed
