"""The warp-tiled GEMM kernel: gemm_device.py's block tile and helpers, with the outputs dealt out by warp tile.

gemm_wtile_kernel (tiles spelt BMxBNxBK/TMxTNwWMxWN, gemm_tiles.py) cuts the block's BM x BN tile of C
into WM x WN warp tiles, one per lane group of LANES (32) consecutive threads; a lane computes TM x TN outputs
as (TM / 4) x (TN / 4) sub-tiles of 4 x 4, its sub-tiles WM / (TM / 4) rows and WN / (TN / 4) columns apart
inside the warp tile, the lanes of a sub-tile laid (WM / TM) x (WN / TN), row-major. So per k a lane group
reads WM + WN floats of shared memory: 96 for a 32 x 64 warp tile, where gemm_kernel's 32 consecutive
threads read 16 rows and 128 columns of a 128x128/8x8 block tile (144); lanes of one row read consecutive
float4 (B), lanes of one column the same float4 (A, a broadcast). The manner of CUTLASS's SIMT sgemm and
of the 'warptiling' kernel of Simon Boehm's SGEMM notes.
The lane group is only a thread -> output mapping: no shuffles, no warpSize; under wave64 (gfx950) a wave
holds two lane groups, the barriers are the block's, so the result does not depend on the wave size (and
the HIP says "wtile", never "warp", next to its 32s: tests/test_translator.py's warp-width lint holds).
The next k's fragments are read from shared memory while this k's products run (double-buffered register
fragments); at a K-tile's last k the next K-tile is stored to the other shared buffer and the barrier
taken first, so that the first fragments of the next K-tile load behind the last products of this one.
Loads (global float4 / guarded scalars, register prefetch, double-buffered k-major shared memory), the
block's tile and K slice, triu/tril tile skipping and the epilogue (bias, mask, split-K slices) are
gemm_device.py's.
Registers (ptxas -v, nvcc 13.0, sm_90; at most 128: two blocks of 256 threads, or one of 512): 128, no spills, at
128x128x8/8x8 and 256x128x8/8x8 (64 accumulators, 2 x (8 + 8) fragments, 2 float4 of prefetched operands);
at BK 16 the 8x8 tiles spill 56 bytes (gemm_kernel's 128x128x16/8x8: 36-52); 115 at 128x64x16/8x4, 80 at
64x64x16/4x4. Unbounded, ptxas would take 155 (BK 8) and 168 (BK 16).
"""

from __future__ import annotations

from hipforge.translate.kernels.gemm_device import HELPERS
from hipforge.translate.kernels.gemm_tiles import LANES

WARP_DEVICE = HELPERS + """
// a lane's TM x TN fragments of k-row kk: 4 consecutive rows (columns) per sub-tile, sub-tiles SG apart
template <int TM, int TN, int SGM, int SGN, int XA, int XB>
__device__ __forceinline__ void hf_gemm_fragments(float (&a)[TM], float (&b)[TN], const float4 (*As)[XA],
                                                  const float4 (*Bs)[XB], int kk, int am, int bn) {
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
        const float4 v = As[kk][(am + g * SGM) / 4];
        a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
    }
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
        const float4 v = Bs[kk][(bn + g * SGN) / 4];
        b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
    }
}

template <int BM, int BN, int BK, int TM, int TN, int WM, int WN, bool TRANS_A, bool TRANS_B, int TRI, class EPI>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), (BM / TM) * (BN / TN) <= 256 ? 2 : 1)
gemm_wtile_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                  float* __restrict__ C, int M, int N, int K, int k_split, int64_t sA, int64_t sB, int64_t sC,
                  int64_t s_split, int diag, int vec_a, int vec_b, EPI epi) {
    constexpr int NT = (BM / TM) * (BN / TN), LANES = @LANES@, LN = WN / TN;  // LN lanes along N, LANES / LN along M
    constexpr int SGM = WM / (TM / 4), SGN = WN / (TN / 4);  // a lane's sub-tiles, SG apart in its warp tile
    constexpr int LA = (BM * BK / 4 + NT - 1) / NT, LB = (BN * BK / 4 + NT - 1) / NT;
    static_assert((WM / TM) * LN == LANES && BM % WM == 0 && BN % WN == 0 && BK % 2 == 0, "gemm_tiles.parse");
    __shared__ float4 As[2][BK][BM / 4 + 1];
    __shared__ float4 Bs[2][BK][BN / 4 + 1];
    const int tid = threadIdx.x, lane = tid % LANES, wt = tid / LANES;  // wt: the lane group's warp tile
    // the lane's first row and column in the block tile: its warp tile's corner, then its 4 x 4 place
    const int am = (wt / (BN / WN)) * WM + (lane / LN) * 4, bn = (wt % (BN / WN)) * WN + (lane % LN) * 4;
    const HfGemmBlock blk = hf_gemm_block<BM, BN, TRI>(M, N, K, k_split, diag);
    const int row0 = blk.row0, col0 = blk.col0, k_end = blk.k_end, k_stop = blk.k_stop;
    A += blockIdx.y * sA; B += blockIdx.y * sB; C += blockIdx.y * sC + blockIdx.z * s_split;
    // a lane whose outputs all lie past an edge only loads and waits (tiles larger than a small C)
    const bool active = row0 + am < M && col0 + bn < N;
    float acc[TM][TN] = {};
    float a[2][TM], b[2][TN];  // k's fragments and k + 1's
    float4 ra[LA], rb[LB];
    int buf = 0;
    if (blk.k_begin < k_stop) {
        hf_gemm_fetch<BM, BK, NT, !TRANS_A>(ra, A, TRANS_A ? M : K, row0, M, blk.k_begin, k_end, vec_a, tid);
        hf_gemm_fetch<BN, BK, NT, TRANS_B>(rb, B, TRANS_B ? K : N, col0, N, blk.k_begin, k_end, vec_b, tid);
        hf_gemm_stash<BM, BK, NT, !TRANS_A>(As[0], ra, tid);
        hf_gemm_stash<BN, BK, NT, TRANS_B>(Bs[0], rb, tid);
        __syncthreads();
        if (active) hf_gemm_fragments<TM, TN, SGM, SGN, BM / 4 + 1, BN / 4 + 1>(a[0], b[0], As[0], Bs[0], 0, am, bn);
    }
    for (int k0 = blk.k_begin; k0 < k_stop; k0 += BK) {
        const bool more = k0 + BK < k_stop;  // the same for the whole block: the barrier below is uniform
        if (more) {
            hf_gemm_fetch<BM, BK, NT, !TRANS_A>(ra, A, TRANS_A ? M : K, row0, M, k0 + BK, k_end, vec_a, tid);
            hf_gemm_fetch<BN, BK, NT, TRANS_B>(rb, B, TRANS_B ? K : N, col0, N, k0 + BK, k_end, vec_b, tid);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk == BK - 1 && more) {  // every lane has read this buffer's last fragments: the next K-tile in
                hf_gemm_stash<BM, BK, NT, !TRANS_A>(As[buf ^ 1], ra, tid);
                hf_gemm_stash<BN, BK, NT, TRANS_B>(Bs[buf ^ 1], rb, tid);
                __syncthreads();
                buf ^= 1;
            }
            if (active) {
                if (kk < BK - 1 || more)  // BK is even: a K-tile starts with its fragments in a[0], b[0]
                    hf_gemm_fragments<TM, TN, SGM, SGN, BM / 4 + 1, BN / 4 + 1>(a[(kk + 1) % 2], b[(kk + 1) % 2],
                                                                              As[buf], Bs[buf], (kk + 1) % BK, am, bn);
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[kk % 2][i], b[kk % 2][j], acc[i][j]);
            }
        }
    }
    // without split-K the bias and the mask, else raw slice sums: gemm_split_sum adds those
    hf_gemm_store<TM, TN, SGM, SGN, TRI>(acc, C, bias, M, N, row0, am, col0, bn, diag, gridDim.z == 1, epi,
                                         blockIdx.y * sC);
}
""".replace("@LANES@", str(LANES))
