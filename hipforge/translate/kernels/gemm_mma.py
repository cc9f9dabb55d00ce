"""The GEMM on matrix cores at fp32 accuracy (GenParams.gemm_engine "mma"): AMD's fp32 MFMA where a HIP
compiler builds (gfx950, gfx942: the product's target), NVIDIA's TF32 tensor cores under nvcc (the cuda proxy).

MFMA (v_mfma_f32_16x16x4_f32) multiplies fp32 operands at fp32 accuracy: one wavefront of 64 lanes takes a
16 x 16 x 4 step, lane l holding A[l % 16][l / 16] and B[l / 16][l % 16] and accumulating C rows 4 * (l / 16) + p,
column l % 16, p < 4 (the layout of AMD's matrix instruction calculator). A wavefront computes a 64 x 64 tile of
the block's outputs as 4 x 4 such fragments, its operands read from the shared tiles lane by lane (rows padded by
16 floats: the 16 lanes of one k read 16 banks, the next k's lanes the other 16). Arches without MFMA (and the
cpu backend's tests) take the same step through shuffles in that layout.
TF32 keeps 10 of fp32's 23 mantissa bits, so one TF32 product per fp32 product misses KernelBench's 1e-4
(and our evaluator's mixed-scale inputs). Each operand is split instead into two TF32 values, x = hi + lo
(hi = tf32(x), lo = tf32(x - hi); x - hi is exact in fp32), and a * b is taken as lo_a*hi_b + hi_a*lo_b +
hi_a*hi_b, accumulated in fp32: only lo_a*lo_b (about 2^-22 of the product) and lo's own rounding are
dropped, about the error of an fp32 fused multiply-add chain (CUTLASS's "3xTF32"). By the datasheet three
tensor-core products should still beat one fp32 FMA per product on the vector units (H100: 495 TF32 TFLOP/s
dense against 67 fp32); not yet measured (scripts/gpu_mma_check.sh). The evaluator's low-mantissa inputs,
which differ only below TF32's (and float16's) 10 bits and fail a single TF32 product, keep their bits in lo.
Not IEEE for non-finite operands: an infinite input (or one TF32 rounds past float's largest) gives NaN where
fp32 gives an infinity (inf - inf in lo, inf * 0 in the cross terms).
Shape: a block computes BM x BN outputs of C from the double-buffered k-major shared tiles of
gemm_device.py (the same loads, K slices, triu/tril skipping and split-K workspace), each group (a wavefront
of 64 on AMD, a warp of 32 under nvcc: 256 threads either way) a WM x WN tile of it in 16 x 16 fragments.
The epilogue stages each fragment through shared memory, so edges, the bias, the mask, split-K slices and a
fused epilogue (gemm_epilogue.py's functor) are applied per element as the simt kernels do.
HF_MMA_ENGINE (MMA_HELPERS) names the engine: 1 under nvcc, 2 under a HIP compiler, none elsewhere (g++, the
cpu backend), where the host launches the simt tile kernel instead.
"""

from __future__ import annotations

from hipforge.translate.kernels.gemm_tiles import GemmTile

MMA_TILE = GemmTile(128, 128, 16, 1, 1)  # BM x BN x BK; tm/tn unused: the fragments tile the groups' outputs
MMA_THREADS = 256  # 4 wavefronts of 64 lanes, each a 64 x 64 tile; or 8 warps of 32, each 64 x 32

# the candidate carries these once (emit/candidate.py) for every kernel that calls hf_tf32_split: the GEMM's, the
# implicit-GEMM conv's (conv_gemm.py); hf_tf32_mma adds a x b to acc at fp32 accuracy, hf_mfma_16x16x4 one MFMA step;
# hf_mma_stage and hf_group_sync are either engine's
MMA_HELPERS = """#if defined(__NVCC__)
#define HF_MMA_ENGINE 1  // NVIDIA tensor cores, 3xTF32 (gemm_mma.py)
#elif defined(__HIP__)
#define HF_MMA_ENGINE 2  // AMD matrix cores, fp32 MFMA
#endif
#if HF_MMA_ENGINE == 1
#include <mma.h>
// x = hi + lo, both TF32 (see gemm_mma.py): the rounding error of hi is exact in fp32
template <typename Frag>
__device__ __forceinline__ void hf_tf32_split(const Frag& x, Frag& hi, Frag& lo) {
#pragma unroll
    for (int t = 0; t < x.num_elements; ++t) {
        hi.x[t] = nvcuda::wmma::__float_to_tf32(x.x[t]);
        lo.x[t] = nvcuda::wmma::__float_to_tf32(x.x[t] - hi.x[t]);
    }
}

// the small terms first: they are lost last to rounding
template <typename Acc, typename FragA, typename FragB>
__device__ __forceinline__ void hf_tf32_mma(Acc& acc, const FragA& a_hi, const FragA& a_lo, const FragB& b_hi,
                                            const FragB& b_lo) {
    nvcuda::wmma::mma_sync(acc, a_lo, b_hi, acc);
    nvcuda::wmma::mma_sync(acc, a_hi, b_lo, acc);
    nvcuda::wmma::mma_sync(acc, a_hi, b_hi, acc);
}

__device__ __forceinline__ void hf_group_sync() { __syncwarp(); }

// a fragment into the group's 16 x 16 row-major stage, seen by all its lanes once this returns
template <typename Acc>
__device__ __forceinline__ void hf_mma_stage(float* st, const Acc& acc) {
    nvcuda::wmma::store_matrix_sync(st, acc, 16, nvcuda::wmma::mem_row_major);
    hf_group_sync();
}
#elif HF_MMA_ENGINE == 2
#if defined(__clang__)
typedef float hf_f32x4 __attribute__((ext_vector_type(4)));
#else
typedef float hf_f32x4 __attribute__((vector_size(16)));
#endif
// c += A (16 x 4) B (4 x 16) for one wavefront: A[l % 16][l / 16] and B[l / 16][l % 16] in lane l, which holds C
// rows 4 * (l / 16) + p, column l % 16
__device__ __forceinline__ hf_f32x4 hf_mfma_16x16x4(float a, float b, hf_f32x4 c) {
#if defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \\
    defined(__gfx942__) || defined(__gfx950__)
    return __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, c, 0, 0, 0);
#else  // no MFMA (and the cpu backend's tests): the same step in that layout through shuffles; wave64 only
    const int lane = threadIdx.x % 64, m0 = 4 * (lane / 16), n = lane % 16;
    for (int k = 0; k < 4; ++k) {
        const float bk = __shfl(b, 16 * k + n, 64);
        for (int p = 0; p < 4; ++p) c[p] += __shfl(a, 16 * k + m0 + p, 64) * bk;
    }
    return c;
#endif
}

// a wavefront's shared-memory writes seen by its other lanes
__device__ __forceinline__ void hf_group_sync() {
#if defined(__HIP_DEVICE_COMPILE__)
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#elif !defined(__HIP__)
    __syncwarp();  // the cpu backend's tests: one warp of 64 lanes
#endif
}

// a fragment into the wavefront's 16 x 16 row-major stage (lane l holds rows 4 * (l / 16) + p of column l % 16),
// seen by all its lanes once this returns
__device__ __forceinline__ void hf_mma_stage(float* st, const hf_f32x4& acc) {
    const int lane = threadIdx.x % 64;
#pragma unroll
    for (int p = 0; p < 4; ++p) st[(4 * (lane / 16) + p) * 16 + lane % 16] = acc[p];
    hf_group_sync();
}
#endif
"""

MMA_DEVICE = """
#if defined(HF_MMA_ENGINE)
template <int BM, int BN, int BK, bool TRANS_A, bool TRANS_B, int TRI, class EPI>
__global__ void __launch_bounds__(@THREADS@)
gemm_mma_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                float* __restrict__ C, int M, int N, int K, int k_split, int64_t sA, int64_t sB, int64_t sC,
                int64_t s_split, int diag, int vec_a, int vec_b, EPI epi) {
#if HF_MMA_ENGINE == 1
    namespace wmma = nvcuda::wmma;
    constexpr int G = 32, WM = 64, WN = 32, PAD = 2;  // rows of BM + 8 floats: 32-byte aligned, as wmma loads need
#else
    constexpr int G = 64, WM = 64, WN = 64, PAD = 4;  // rows of BM + 16 floats: one k's 16 lanes, 16 banks
#endif
    constexpr int NT = (BM / WM) * (BN / WN) * G, FM = WM / 16, FN = WN / 16;
    constexpr int LA = (BM * BK / 4 + NT - 1) / NT, LB = (BN * BK / 4 + NT - 1) / NT;
    static_assert(NT == @THREADS@ && BK % 8 == 0 && BM % WM == 0 && BN % WN == 0, "gemm_mma.py");
    __shared__ __align__(32) float4 As[2][BK][BM / 4 + PAD];
    __shared__ __align__(32) float4 Bs[2][BK][BN / 4 + PAD];
    __shared__ __align__(32) float stage[NT / G][16 * 16];  // a group's fragment on its way to C
    const int tid = threadIdx.x, group = tid / G, member = tid % G;
    const int gm = (group / (BN / WN)) * WM, gn = (group % (BN / WN)) * WN;  // the group's corner in the tile
    const HfGemmBlock blk = hf_gemm_block<BM, BN, TRI>(M, N, K, k_split, diag);
    const int row0 = blk.row0, col0 = blk.col0, k_end = blk.k_end, k_stop = blk.k_stop;
    A += blockIdx.y * sA; B += blockIdx.y * sB; C += blockIdx.y * sC + blockIdx.z * s_split;
#if HF_MMA_ENGINE == 1
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
#else
    hf_f32x4 acc[FM][FN];
    const int lane_m = member % 16, lane_k = member / 16;  // the lane's row (column) of A (B) and its k in a step
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) acc[i][j] = hf_f32x4{0.0f, 0.0f, 0.0f, 0.0f};
#endif
    float4 ra[LA], rb[LB];
    int buf = 0;
    if (blk.k_begin < k_stop) {
        hf_gemm_fetch<BM, BK, NT, !TRANS_A>(ra, A, TRANS_A ? M : K, row0, M, blk.k_begin, k_end, vec_a, tid);
        hf_gemm_fetch<BN, BK, NT, TRANS_B>(rb, B, TRANS_B ? K : N, col0, N, blk.k_begin, k_end, vec_b, tid);
        hf_gemm_stash<BM, BK, NT, !TRANS_A, PAD>(As[0], ra, tid);
        hf_gemm_stash<BN, BK, NT, TRANS_B, PAD>(Bs[0], rb, tid);
        __syncthreads();
    }
    for (int k0 = blk.k_begin; k0 < k_stop; k0 += BK) {
        const bool more = k0 + BK < k_stop;  // the same for the whole block: the barrier below is uniform
        if (more) {
            hf_gemm_fetch<BM, BK, NT, !TRANS_A>(ra, A, TRANS_A ? M : K, row0, M, k0 + BK, k_end, vec_a, tid);
            hf_gemm_fetch<BN, BK, NT, TRANS_B>(rb, B, TRANS_B ? K : N, col0, N, k0 + BK, k_end, vec_b, tid);
        }
#if HF_MMA_ENGINE == 1
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            // As is A^T row-major, i.e. A column-major; Bs is B row-major
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> a, a_hi[FM], a_lo[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b, b_hi[FN], b_lo[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) {
                wmma::load_matrix_sync(a, reinterpret_cast<const float*>(As[buf][kk]) + gm + 16 * i, BM + 4 * PAD);
                hf_tf32_split(a, a_hi[i], a_lo[i]);
            }
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                wmma::load_matrix_sync(b, reinterpret_cast<const float*>(Bs[buf][kk]) + gn + 16 * j, BN + 4 * PAD);
                hf_tf32_split(b, b_hi[j], b_lo[j]);
            }
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) hf_tf32_mma(acc[i][j], a_hi[i], a_lo[i], b_hi[j], b_lo[j]);
        }
#else
#pragma unroll
        for (int kk = 0; kk < BK; kk += 4) {
            const float* as = reinterpret_cast<const float*>(As[buf][kk + lane_k]) + gm + lane_m;
            const float* bs = reinterpret_cast<const float*>(Bs[buf][kk + lane_k]) + gn + lane_m;
            float a[FM], b[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) a[i] = as[16 * i];
#pragma unroll
            for (int j = 0; j < FN; ++j) b[j] = bs[16 * j];
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) acc[i][j] = hf_mfma_16x16x4(a[i], b[j], acc[i][j]);
        }
#endif
        if (more) {
            hf_gemm_stash<BM, BK, NT, !TRANS_A, PAD>(As[buf ^ 1], ra, tid);
            hf_gemm_stash<BN, BK, NT, TRANS_B, PAD>(Bs[buf ^ 1], rb, tid);
            __syncthreads();
            buf ^= 1;
        }
    }
    // without split-K the bias, the mask and the epilogue, else raw slice sums: gemm_split_sum adds those
    const bool whole = gridDim.z == 1;
    const int64_t c0 = blockIdx.y * sC;
    float* st = stage[group];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            hf_mma_stage(st, acc[i][j]);
            for (int e = member; e < 16 * 16; e += G) {
                const int row = row0 + gm + 16 * i + e / 16, col = col0 + gn + 16 * j + e % 16;
                if (row >= M || col >= N) continue;
                const int d = col - row;
                const bool kept = TRI == 0 || (TRI == 1 ? d >= diag : d <= diag);
                const int64_t at = (int64_t)row * N + col;
                C[at] = !whole ? st[e] : epi(kept ? st[e] + (bias ? bias[col] : 0.0f) : 0.0f, c0 + at, col);
            }
            hf_group_sync();
        }
}
#endif
""".replace("@THREADS@", str(MMA_THREADS))
