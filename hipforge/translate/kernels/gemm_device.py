"""The GEMM's device code: a register-blocked, double-buffered tile kernel, the split-K sum, and the helpers
the warp-tiled kernel (gemm_warp.py) shares with it: operand tiles into registers and shared memory, the
block's tile of C and K slice, and the epilogue.

gemm_kernel: a block computes BM x BN outputs of C over one K slice (blockIdx.z; the whole of K without
split-K), each thread TM x TN of them from registers, in float4 groups SGM rows / SGN columns apart (so a
warp's float4 reads of shared memory and its float4 stores of C are contiguous). Both operands sit k-major
in shared memory ([k][m], [k][n], padded by one float4 against bank conflicts), so each thread reads them
as float4. Shared memory is double-buffered: the next K-tile is loaded into registers while this one is
multiplied, then stored into the other buffer, one barrier per K-tile. Global loads are float4 where the
operand's rows are 16-byte aligned (vec_a / vec_b), guarded scalars otherwise and at every edge.
Tiles are walked in groups of GROUP tile-rows so that blocks running together share B's columns in L2;
a triu/tril tile that the mask zeroes entirely skips its products.
With split-K (gridDim.z > 1) each slice writes its raw sums to a workspace and gemm_split_sum adds the
slices in order, then the bias and the mask; otherwise the tile kernel applies them itself.
A candidate carries HELPERS and the one tile kernel it launches (DEVICE, or gemm_warp.WARP_DEVICE).
"""

from __future__ import annotations

HELPERS = """// a BK x X tile of one operand into registers, float4 chunks; KC: stored (X, ld), contiguous along k
// (A, or B^T); else stored (K, ld), contiguous along x. Out-of-range elements read as 0.
template <int X, int BK, int NT, bool KC>
__device__ __forceinline__ void hf_gemm_fetch(float4 (&r)[(X * BK / 4 + NT - 1) / NT], const float* __restrict__ p,
                                              int64_t ld, int x0, int xn, int k0, int kn, int vec, int tid) {
    constexpr int CH = X * BK / 4;
#pragma unroll
    for (int l = 0; l < (CH + NT - 1) / NT; ++l) {
        const int c = tid + l * NT;
        const int x = x0 + (KC ? c / (BK / 4) : (c % (X / 4)) * 4), k = k0 + (KC ? (c % (BK / 4)) * 4 : c / (X / 4));
        const float* q = KC ? p + (int64_t)x * ld + k : p + (int64_t)k * ld + x;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (c < CH && x < xn && k < kn) {
            if (vec) {  // the host checked alignment and that the run of 4 never straddles an edge
                v = *reinterpret_cast<const float4*>(q);
            } else {
                const int left = KC ? kn - k : xn - x;  // elements left along the contiguous run
                v.x = q[0];
                v.y = left > 1 ? q[1] : 0.0f;
                v.z = left > 2 ? q[2] : 0.0f;
                v.w = left > 3 ? q[3] : 0.0f;
            }
        }
        r[l] = v;
    }
}

// the registers into shared memory, [k][x] rows padded by P float4; KC chunks run along k, so they land as 4
// scalars down a column
template <int X, int BK, int NT, bool KC, int P = 1>
__device__ __forceinline__ void hf_gemm_stash(float4 (*s)[X / 4 + P], const float4 (&r)[(X * BK / 4 + NT - 1) / NT],
                                              int tid) {
    constexpr int CH = X * BK / 4;
#pragma unroll
    for (int l = 0; l < (CH + NT - 1) / NT; ++l) {
        const int c = tid + l * NT;
        if (c >= CH) break;
        if (KC) {
            const int x = c / (BK / 4), k = (c % (BK / 4)) * 4;
            reinterpret_cast<float*>(s[k])[x] = r[l].x;
            reinterpret_cast<float*>(s[k + 1])[x] = r[l].y;
            reinterpret_cast<float*>(s[k + 2])[x] = r[l].z;
            reinterpret_cast<float*>(s[k + 3])[x] = r[l].w;
        } else {
            s[c / (X / 4)][c % (X / 4)] = r[l];
        }
    }
}

// the block's BM x BN tile of C, walked in groups of GROUP tile-rows so that blocks running together share
// B's columns in L2; its K slice (blockIdx.z); k_stop = k_begin when the triu/tril mask keeps none of the
// tile (triu keeps col - row >= diag, tril col - row <= diag), so that it multiplies nothing
struct HfGemmBlock {
    int row0, col0, k_begin, k_end, k_stop;
};

template <int BM, int BN, int TRI>
__device__ __forceinline__ HfGemmBlock hf_gemm_block(int M, int N, int K, int k_split, int diag) {
    constexpr int GROUP = 8;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int group = blockIdx.x / (GROUP * tiles_n), in_group = blockIdx.x % (GROUP * tiles_n);
    const int rows_here = min(tiles_m - group * GROUP, GROUP);
    HfGemmBlock t;
    t.row0 = (group * GROUP + in_group % rows_here) * BM;
    t.col0 = (in_group / rows_here) * BN;
    t.k_begin = blockIdx.z * k_split;
    t.k_end = min(K, t.k_begin + k_split);
    const bool masked = (TRI == 1 && t.col0 + BN - 1 - t.row0 < diag) ||
                        (TRI == 2 && t.col0 - (t.row0 + BM - 1) > diag);
    t.k_stop = masked ? t.k_begin : t.k_end;
    return t;
}

// the epilogue of a GEMM that nothing is fused after: an output as it is (else gemm_epilogue.py's functor:
// the fused elementwise work at flat index `at` of the whole output, column `col`)
struct HfGemmPlain {
    __device__ __forceinline__ float operator()(float v, int64_t, int) const { return v; }
};

// a thread's TM x TN sums into C: rows row0 + (i / 4) * SGM + r + i % 4, columns col0 + g * SGN + c + 0..3,
// float4 stores where rows are 16-byte aligned; `whole` (no split-K): with the bias, the mask and the epilogue
// (c0: this batch's first flat index), else the raw slice sums
template <int TM, int TN, int SGM, int SGN, int TRI, class EPI>
__device__ __forceinline__ void hf_gemm_store(const float (&acc)[TM][TN], float* __restrict__ C,
                                              const float* __restrict__ bias, int M, int N, int row0, int r, int col0,
                                              int c, int diag, bool whole, const EPI& epi, int64_t c0) {
    const bool vec_c = N % 4 == 0;  // C and the workspace come from torch::empty: 16-byte aligned rows
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + (i / 4) * SGM + r + i % 4;
        if (row >= M) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const int col = col0 + g * SGN + c;
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int d = col + j - row;
                const bool kept = TRI == 0 || (TRI == 1 ? d >= diag : d <= diag);
                v[j] = !whole ? acc[i][4 * g + j]
                              : epi(kept ? acc[i][4 * g + j] + (bias && col + j < N ? bias[col + j] : 0.0f) : 0.0f,
                                    c0 + (int64_t)row * N + col + j, col + j);
            }
            float* out = C + (int64_t)row * N + col;
            if (vec_c && col < N) {
                *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < N) out[j] = v[j];
            }
        }
    }
}

// the split-K slices of `total` outputs added in order, then bias, mask and epilogue
template <int TRI, class EPI>
__global__ void gemm_split_sum(const float* __restrict__ ws, const float* __restrict__ bias, float* __restrict__ C,
                               int M, int N, int64_t total, int splits, int diag, EPI epi) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int col = (int)(i % N), row = (int)((i / N) % M);
        const bool kept = TRI == 0 || (TRI == 1 ? col - row >= diag : col - row <= diag);
        float s = 0.0f;
        for (int z = 0; kept && z < splits; ++z) s += ws[z * total + i];
        C[i] = epi(kept ? s + (bias ? bias[col] : 0.0f) : 0.0f, i, col);
    }
}

static int hf_compute_units() {
    int device = 0, units = 0;
    (void)hipGetDevice(&device);
    (void)hipDeviceGetAttribute(&units, hipDeviceAttributeMultiprocessorCount, device);
    return units > 0 ? units : 1;
}
"""

DEVICE = HELPERS + """
template <int BM, int BN, int BK, int TM, int TN, bool TRANS_A, bool TRANS_B, int TRI, class EPI>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), (BM / TM) * (BN / TN) <= 256 ? 2 : 1)
gemm_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
            float* __restrict__ C, int M, int N, int K, int k_split, int64_t sA, int64_t sB, int64_t sC,
            int64_t s_split, int diag, int vec_a, int vec_b, EPI epi) {
    constexpr int NT = (BM / TM) * (BN / TN), TX = BN / TN;
    constexpr int GM = TM / 4, GN = TN / 4, SGM = BM / GM, SGN = BN / GN;  // a thread's float4 groups, SG apart
    constexpr int LA = (BM * BK / 4 + NT - 1) / NT, LB = (BN * BK / 4 + NT - 1) / NT;
    __shared__ float4 As[2][BK][BM / 4 + 1];
    __shared__ float4 Bs[2][BK][BN / 4 + 1];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const HfGemmBlock blk = hf_gemm_block<BM, BN, TRI>(M, N, K, k_split, diag);
    const int row0 = blk.row0, col0 = blk.col0, k_begin = blk.k_begin, k_end = blk.k_end, k_stop = blk.k_stop;
    A += blockIdx.y * sA; B += blockIdx.y * sB; C += blockIdx.y * sC + blockIdx.z * s_split;
    // a thread whose outputs all lie past an edge only loads and waits (tiles larger than a small C)
    const bool active = row0 + ty * 4 < M && col0 + tx * 4 < N;
    float acc[TM][TN] = {};
    float4 ra[LA], rb[LB];
    int buf = 0;
    if (k_begin < k_stop) {
        hf_gemm_fetch<BM, BK, NT, !TRANS_A>(ra, A, TRANS_A ? M : K, row0, M, k_begin, k_end, vec_a, tid);
        hf_gemm_fetch<BN, BK, NT, TRANS_B>(rb, B, TRANS_B ? K : N, col0, N, k_begin, k_end, vec_b, tid);
        hf_gemm_stash<BM, BK, NT, !TRANS_A>(As[0], ra, tid);
        hf_gemm_stash<BN, BK, NT, TRANS_B>(Bs[0], rb, tid);
        __syncthreads();
    }
    for (int k0 = k_begin; k0 < k_stop; k0 += BK) {
        const bool more = k0 + BK < k_stop;  // the same for the whole block: the barrier below is uniform
        if (more) {
            hf_gemm_fetch<BM, BK, NT, !TRANS_A>(ra, A, TRANS_A ? M : K, row0, M, k0 + BK, k_end, vec_a, tid);
            hf_gemm_fetch<BN, BK, NT, TRANS_B>(rb, B, TRANS_B ? K : N, col0, N, k0 + BK, k_end, vec_b, tid);
        }
        if (active) {
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                float a[TM], b[TN];
#pragma unroll
                for (int g = 0; g < GM; ++g) {
                    const float4 v = As[buf][kk][g * (SGM / 4) + ty];
                    a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
                }
#pragma unroll
                for (int g = 0; g < GN; ++g) {
                    const float4 v = Bs[buf][kk][g * (SGN / 4) + tx];
                    b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }
        if (more) {
            hf_gemm_stash<BM, BK, NT, !TRANS_A>(As[buf ^ 1], ra, tid);
            hf_gemm_stash<BN, BK, NT, TRANS_B>(Bs[buf ^ 1], rb, tid);
            __syncthreads();
            buf ^= 1;
        }
    }
    // without split-K the bias and the mask, else raw slice sums: gemm_split_sum adds those
    hf_gemm_store<TM, TN, SGM, SGN, TRI>(acc, C, bias, M, N, row0, ty * 4, col0, tx * 4, diag, gridDim.z == 1, epi,
                                         blockIdx.y * sC);
}
"""
