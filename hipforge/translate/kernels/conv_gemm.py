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
        const int64_t m0 = (t % m_tiles) * TM;
        const int n0 = (int)((t / m_tiles) % n_tiles) * TN, g = (int)(t / (m_tiles * n_tiles));
        // the output position whose input column this thread gathers, decoded once per tile
        const int64_t m = m0 + am;
        const bool m_ok = m < M;
        const int64_t pos = m_ok ? m % out_plane : 0;
        const int ow = (int)(pos % OW), oh = (int)((pos / OW) % OH), od = (int)(pos / ((int64_t)OW * OH));
        const float* xg = x + ((m_ok ? m / out_plane : 0) * C + (int64_t)g * Cg) * in_plane;
        float acc[R][R] = {{}};
        for (int k0 = 0; k0 < K; k0 += TK) {{
            #pragma unroll
            for (int i = 0; i < TK * TM / 256; ++i) {{
                const int kk = tid / TM + i * (256 / TM), k = k0 + kk;
                float v = 0.0f;
                if (m_ok && k < K) {{
                    const int c = k / TAPS, tap = k % TAPS;
                    const int id = od * SD - PD + (tap / (KH * KW)) * DD;
                    const int ih = oh * SH - PH + ((tap / KW) % KH) * DH, iw = ow * SW - PW + (tap % KW) * DW;
                    if (id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W)
                        v = xg[c * in_plane + ((int64_t)id * H + ih) * W + iw];
                }}
                As[kk][am] = v;
            }}
            #pragma unroll
            for (int i = 0; i < TK * TN / 256; ++i) {{
                const int kk = tid % TK, nn = tid / TK + i * (256 / TK), k = k0 + kk, oc = n0 + nn;
                float v = 0.0f;
                if (oc < OCg && k < K)
                    v = FLIP ? w[(((int64_t)g * Cg + k / TAPS) * OCg + oc) * TAPS + (TAPS - 1 - k % TAPS)]
                             : w[((int64_t)g * OCg + oc) * K + k];
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


def gemm_applies(spec: ConvSpec) -> bool:
    """Forward convs, and transposed ones of stride 1 everywhere (no holes between input taps)."""
    return not spec.transposed or all(s == 1 for s in spec.stride)


def gemm_device(name: str, spec: ConvSpec, extra: str, store: Callable[[str, str, str], str]) -> str:
    """The kernel's source; `extra` kernel parameters and `store(at, channel, value)` for an epilogue."""
    nd = len(spec.kernel)

    def pad3(values: tuple[int, ...] | list[int], fill: int) -> tuple[int, ...]:
        return (fill,) * (3 - nd) + tuple(values)

    padding = [d * (k - 1) - p for k, p, d in zip(spec.kernel, spec.padding, spec.dilation, strict=True)] \
        if spec.transposed else list(spec.padding)
    stored = store("(n * OC + o) * out_plane + p", "o", "acc[r][c] + (bias ? bias[o] : 0.0f)")
    return DEVICE.format(name=name, extra=extra, store=stored, k=pad3(spec.kernel, 1), s=pad3(spec.stride, 1),
                         p=pad3(padding, 0), d=pad3(spec.dilation, 1))
