"""Implicit-GEMM convolution: the dense-channel path of a forward (or stride-1 transposed) conv.

Per group, C[m][oc] = sum_k A[m][k] * B[k][oc] with m an output position (n, od, oh, ow), k an input
channel and tap (c, kd, kh, kw), A gathered from the input (zero outside it) and B the filter. A block
computes a TM x TN tile through shared memory, each thread R x R outputs from registers; tiles are
walked by a 1-D grid-stride loop (64-bit tile and element indices). A stride-1 transposed conv is the
forward conv of the filter flipped in every dim (the flat tap index reversed) with padding
dil * (k - 1) - pad, read from its (C, OC/G, taps) layout.
"""

from __future__ import annotations

from collections.abc import Callable

from hipforge.translate.ir.conv_spec import ConvSpec

THREADS = 256  # (TM / R) * (TN / R)
# both kernels' tile t: its first output position m0 and channel n0 of group g, and the output position whose
# input column this thread gathers (its input plane xg), decoded once per tile
POSITION = """const int64_t m0 = (t % m_tiles) * TM;
const int n0 = (int)((t / m_tiles) % n_tiles) * TN, g = (int)(t / (m_tiles * n_tiles));
const int64_t m = m0 + am;
const bool m_ok = m < M;
const int64_t pos = m_ok ? m % out_plane : 0;
const int ow = (int)(pos % OW), oh = (int)((pos / OW) % OH), od = (int)(pos / ((int64_t)OW * OH));
const float* xg = x + ((m_ok ? m / out_plane : 0) * C + (int64_t)g * Cg) * in_plane;""".replace("\n", "\n" + " " * 8)
# both kernels' loads: the input element output position m gathers for reduction index k (zero outside the
# input: padding), into v; the filter element of k and output channel oc (a transposed conv's flipped)
GATHER = """if (m_ok && k < K) {
    const int c = k / TAPS, tap = k % TAPS;
    const int id = od * SD - PD + (tap / (KH * KW)) * DD;
    const int ih = oh * SH - PH + ((tap / KW) % KH) * DH, iw = ow * SW - PW + (tap % KW) * DW;
    if (id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W)
        v = xg[c * in_plane + ((int64_t)id * H + ih) * W + iw];
}""".replace("\n", "\n" + " " * 16)
FILTER = ("(FLIP ? w[(((int64_t)g * Cg + k / TAPS) * OCg + oc) * TAPS + (TAPS - 1 - k % TAPS)] "
          ": w[((int64_t)g * OCg + oc) * K + k])")

DEVICE = """template <bool FLIP>
__global__ void __launch_bounds__(256) {name}_gemm(const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, int64_t N, int C, int D, int H, int W,
        int OC, int OD, int OH, int OW, int G{extra}) {{
    constexpr int KD = {k[0]}, KH = {k[1]}, KW = {k[2]}, SD = {s[0]}, SH = {s[1]}, SW = {s[2]};
    constexpr int PD = {p[0]}, PH = {p[1]}, PW = {p[2]}, DD = {d[0]}, DH = {d[1]}, DW = {d[2]};
    constexpr int TAPS = KD * KH * KW, TM = 64, TN = 64, TK = 16, R = 4, S = TM / R;
    __shared__ float As[TK][TM];
    __shared__ float Bs[TK][TN + 1];
    const int Cg = C / G, OCg = OC / G, K = Cg * TAPS;
    const int64_t in_plane = (int64_t)D * H * W, out_plane = (int64_t)OD * OH * OW, M = N * out_plane;
    const int64_t m_tiles = (M + TM - 1) / TM;
    const int n_tiles = (OCg + TN - 1) / TN;
    const int tid = threadIdx.x, tx = tid % S, ty = tid / S, am = tid % TM;
    for (int64_t t = blockIdx.x; t < m_tiles * n_tiles * G; t += gridDim.x) {{
        {position}
        float acc[R][R] = {{}};
        for (int k0 = 0; k0 < K; k0 += TK) {{
            #pragma unroll
            for (int i = 0; i < TK * TM / 256; ++i) {{
                const int kk = tid / TM + i * (256 / TM), k = k0 + kk;
                float v = 0.0f;
                {gather}
                As[kk][am] = v;
            }}
            #pragma unroll
            for (int i = 0; i < TK * TN / 256; ++i) {{
                const int kk = tid % TK, nn = tid / TK + i * (256 / TK), k = k0 + kk, oc = n0 + nn;
                float v = 0.0f;
                if (oc < OCg && k < K) v = {filter};
                Bs[kk][nn] = v;
            }}
            __syncthreads();
            #pragma unroll
            for (int kk = 0; kk < TK; ++kk) {{
                float a[R], b[R];
                #pragma unroll
                for (int r = 0; r < R; ++r) {{ a[r] = As[kk][tx + r * S]; b[r] = Bs[kk][ty + r * S]; }}
                #pragma unroll
                for (int r = 0; r < R; ++r)
                    #pragma unroll
                    for (int c = 0; c < R; ++c) acc[r][c] += a[r] * b[c];
            }}
            __syncthreads();
        }}
        #pragma unroll
        for (int r = 0; r < R; ++r) {{
            const int64_t mo = m0 + tx + r * S;
            if (mo >= M) continue;
            const int64_t n = mo / out_plane, p = mo % out_plane;
            #pragma unroll
            for (int c = 0; c < R; ++c) {{
                const int oc = n0 + ty + c * S;
                if (oc < OCg) {{
                    const int o = g * OCg + oc;
                    {store}
                }}
            }}
        }}
    }}
}}
"""


# GenParams.gemm_engine "mma" (gemm_mma.py): the same tiles, gathers and epilogue, the products on matrix cores at
# fp32 accuracy: fp32 MFMA under a HIP compiler, 3xTF32 tensor cores under nvcc. The next K-tile is gathered into
# registers while this one is multiplied, into the other of two shared buffers; each group a corner of the 64 x 64
# tile (a wavefront of 64: 32 x 32, 2 x 2 fragments; a warp of 32: 16 x 32, 1 x 2), staged through shared memory
# to the epilogue.
MMA_DEVICE = """#if defined(HF_MMA_ENGINE)
template <bool FLIP>
__global__ void __launch_bounds__(256) {name}_gemm_mma(const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, int64_t N, int C, int D, int H, int W,
        int OC, int OD, int OH, int OW, int G{extra}) {{
    constexpr int KD = {k[0]}, KH = {k[1]}, KW = {k[2]}, SD = {s[0]}, SH = {s[1]}, SW = {s[2]};
    constexpr int PD = {p[0]}, PH = {p[1]}, PW = {p[2]}, DD = {d[0]}, DH = {d[1]}, DW = {d[2]};
    constexpr int TAPS = KD * KH * KW, TM = 64, TN = 64, TK = 16, LA = TK * TM / 256, LB = TK * TN / 256;
#if HF_MMA_ENGINE == 1
    namespace wmma = nvcuda::wmma;
    constexpr int GS = 32, WM = 16, WN = 32, PAD = 8;  // rows 32-byte aligned, as wmma loads require
#else
    constexpr int GS = 64, WM = 32, WN = 32, PAD = 16;  // one k's 16 lanes in 16 banks, the next k's in the others
#endif
    constexpr int FM = WM / 16, FN = WN / 16;
    __shared__ __align__(32) float As[2][TK][TM + PAD];
    __shared__ __align__(32) float Bs[2][TK][TN + PAD];
    __shared__ __align__(32) float stage[256 / GS][16 * 16];
    const int Cg = C / G, OCg = OC / G, K = Cg * TAPS;
    const int64_t in_plane = (int64_t)D * H * W, out_plane = (int64_t)OD * OH * OW, M = N * out_plane;
    const int64_t m_tiles = (M + TM - 1) / TM;
    const int n_tiles = (OCg + TN - 1) / TN;
    const int tid = threadIdx.x, am = tid % TM, group = tid / GS, member = tid % GS;
    const int gm = (group % (TM / WM)) * WM, gn = (group / (TM / WM)) * WN;
    for (int64_t t = blockIdx.x; t < m_tiles * n_tiles * G; t += gridDim.x) {{
        {position}
        float ra[LA], rb[LB];
        auto gather = [&](int k0) {{
            #pragma unroll
            for (int i = 0; i < LA; ++i) {{
                const int k = k0 + tid / TM + i * (256 / TM);
                float v = 0.0f;
                {gather}
                ra[i] = v;
            }}
            #pragma unroll
            for (int i = 0; i < LB; ++i) {{
                const int k = k0 + tid % TK, oc = n0 + tid / TK + i * (256 / TK);
                rb[i] = oc < OCg && k < K ? {filter} : 0.0f;
            }}
        }};
        auto stash = [&](int b) {{
            #pragma unroll
            for (int i = 0; i < LA; ++i) As[b][tid / TM + i * (256 / TM)][am] = ra[i];
            #pragma unroll
            for (int i = 0; i < LB; ++i) Bs[b][tid % TK][tid / TK + i * (256 / TK)] = rb[i];
        }};
#if HF_MMA_ENGINE == 1
        wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
        #pragma unroll
        for (int i = 0; i < FM; ++i)
            #pragma unroll
            for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
#else
        const int lane_m = member % 16, lane_k = member / 16;  // the lane's row (column) of A (B), its k in a step
        hf_f32x4 acc[FM][FN];
        #pragma unroll
        for (int i = 0; i < FM; ++i)
            #pragma unroll
            for (int j = 0; j < FN; ++j) acc[i][j] = hf_f32x4{{0.0f, 0.0f, 0.0f, 0.0f}};
#endif
        gather(0);
        stash(0);
        __syncthreads();
        int buf = 0;
        for (int k0 = 0; k0 < K; k0 += TK) {{
            const bool more = k0 + TK < K;
            if (more) gather(k0 + TK);
#if HF_MMA_ENGINE == 1
            #pragma unroll
            for (int kk = 0; kk < TK; kk += 8) {{
                wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> a, a_hi, a_lo;
                wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b, b_hi, b_lo;
                wmma::load_matrix_sync(a, &As[buf][kk][gm], TM + PAD);
                hf_tf32_split(a, a_hi, a_lo);
                #pragma unroll
                for (int j = 0; j < FN; ++j) {{
                    wmma::load_matrix_sync(b, &Bs[buf][kk][gn + 16 * j], TN + PAD);
                    hf_tf32_split(b, b_hi, b_lo);
                    hf_tf32_mma(acc[0][j], a_hi, a_lo, b_hi, b_lo);
                }}
            }}
#else
            #pragma unroll
            for (int kk = 0; kk < TK; kk += 4) {{
                float a[FM], b[FN];
                #pragma unroll
                for (int i = 0; i < FM; ++i) a[i] = As[buf][kk + lane_k][gm + 16 * i + lane_m];
                #pragma unroll
                for (int j = 0; j < FN; ++j) b[j] = Bs[buf][kk + lane_k][gn + 16 * j + lane_m];
                #pragma unroll
                for (int i = 0; i < FM; ++i)
                    #pragma unroll
                    for (int j = 0; j < FN; ++j) acc[i][j] = hf_mfma_16x16x4(a[i], b[j], acc[i][j]);
            }}
#endif
            if (more) stash(buf ^ 1);
            __syncthreads();  // the next K-tile is in; this one's readers are done before it is written again
            buf ^= 1;
        }}
        float* st = stage[group];
        #pragma unroll
        for (int i = 0; i < FM; ++i)
            #pragma unroll
            for (int j = 0; j < FN; ++j) {{
                hf_mma_stage(st, acc[i][j]);
                for (int e = member; e < 16 * 16; e += GS) {{
                    const int64_t mo = m0 + gm + 16 * i + e / 16;
                    const int oc = n0 + gn + 16 * j + e % 16;
                    if (mo < M && oc < OCg) {{
                        const int64_t n = mo / out_plane, p = mo % out_plane;
                        const int o = g * OCg + oc;
                        {store}
                    }}
                }}
                hf_group_sync();
            }}
    }}
}}
#endif
"""


def gemm_applies(spec: ConvSpec) -> bool:
    """Forward convs, and transposed ones of stride 1 everywhere (no holes between input taps)."""
    return not spec.transposed or all(s == 1 for s in spec.stride)


def gemm_device(name: str, spec: ConvSpec, extra: str, store: Callable[[str, str, str], str], mma: bool = False) -> str:
    """The kernel's source (with `mma`, MMA_DEVICE's too); `extra` kernel parameters and `store(at, channel,
    value)` for an epilogue."""
    nd = len(spec.kernel)

    def pad3(values: tuple[int, ...] | list[int], fill: int) -> tuple[int, ...]:
        return (fill,) * (3 - nd) + tuple(values)

    padding = [d * (k - 1) - p for k, p, d in zip(spec.kernel, spec.padding, spec.dilation, strict=True)] \
        if spec.transposed else list(spec.padding)
    shape = {"position": POSITION, "gather": GATHER, "filter": FILTER, "k": pad3(spec.kernel, 1),
             "s": pad3(spec.stride, 1), "p": pad3(padding, 0), "d": pad3(spec.dilation, 1)}
    stored = store("(n * OC + o) * out_plane + p", "o", "acc[r][c] + (bias ? bias[o] : 0.0f)")
    source = DEVICE.format(name=name, extra=extra, store=stored, **shape)
    if mma:
        staged = store("(n * OC + o) * out_plane + p", "o", "st[e] + (bias ? bias[o] : 0.0f)")
        source += "\n" + MMA_DEVICE.format(name=name, extra=extra, store=staged, **shape)
    return source
