"""A direct NCHW convolution for single-op conv2d tasks (groups, so depthwise too).

One output element per thread in a grid-stride loop. Stride, padding and dilation are the module's
(hyperparameters, fixed); every size, and the group count, is read from the tensors at run time.
"""

from __future__ import annotations

from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_common import Kernel, grid_for
from hipforge.agents.translate.ir import Val
from hipforge.agents.translate.params import GenParams

DEVICE = """__global__ void conv2d_kernel(const float* __restrict__ x, const float* __restrict__ w,
                              const float* __restrict__ bias, float* __restrict__ y,
                              int N, int C, int H, int W, int OC, int Cg, int KH, int KW, int OH, int OW,
                              int sh, int sw, int ph, int pw, int dh, int dw) {
    const int64_t total = (int64_t)N * OC * OH * OW;
    const int out_per_group = OC / (C / Cg);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int ow = i % OW, oh = (i / OW) % OH, oc = (i / ((int64_t)OW * OH)) % OC;
        const int n = i / ((int64_t)OW * OH * OC);
        const int ic0 = (oc / out_per_group) * Cg;
        float acc = bias ? bias[oc] : 0.0f;
        for (int ic = 0; ic < Cg; ++ic) {
            const float* xp = x + ((int64_t)n * C + ic0 + ic) * H * W;
            const float* wp = w + ((int64_t)oc * Cg + ic) * KH * KW;
            for (int kh = 0; kh < KH; ++kh) {
                const int ih = oh * sh - ph + kh * dh;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    const int iw = ow * sw - pw + kw * dw;
                    if (iw >= 0 && iw < W) acc += xp[(int64_t)ih * W + iw] * wp[kh * KW + kw];
                }
            }
        }
        y[i] = acc;
    }
}
"""


def conv2d_kernel(name: str, out: Val, params: GenParams) -> Kernel:
    x, weight, *bias = out.args
    if "conv2d" not in out.extra or x.op != "input":
        raise Untranslatable(f"unsupported op: {out.fn.split('(')[0]} on its own (only plain conv2d has a kernel)")
    (sh, sw), (ph, pw), (dh, dw) = out.extra["conv2d"]
    signature = ", ".join(f"torch::Tensor {a}" for a in ("x", "w", "bias")[:len(out.args)])
    host = [f"torch::Tensor {name}({signature}) {{",
            "    auto X = x.contiguous(), Wt = w.contiguous();",
            *(["    auto Bias = bias.contiguous();"] if bias else []),
            "    const int64_t N = X.size(0), C = X.size(1), H = X.size(2), W = X.size(3);",
            "    const int64_t OC = Wt.size(0), Cg = Wt.size(1), KH = Wt.size(2), KW = Wt.size(3);",
            f"    const int64_t OH = (H + {2 * ph} - {dh} * (KH - 1) - 1) / {sh} + 1;",
            f"    const int64_t OW = (W + {2 * pw} - {dw} * (KW - 1) - 1) / {sw} + 1;",
            "    auto Y = torch::empty({N, OC, OH, OW}, X.options());",
            "    if (Y.numel() == 0) return Y;",
            f"    const int blocks = {grid_for('Y.numel()', params.block_size * params.elems_per_thread)};",
            f"    conv2d_kernel<<<blocks, {params.block_size}>>>(X.data_ptr<float>(), Wt.data_ptr<float>(), "
            f"{'Bias.data_ptr<float>()' if bias else 'nullptr'}, Y.data_ptr<float>(),",
            "        (int)N, (int)C, (int)H, (int)W, (int)OC, (int)Cg, (int)KH, (int)KW, (int)OH, (int)OW,",
            f"        {sh}, {sw}, {ph}, {pw}, {dh}, {dw});",
            "    return Y;", "}"]
    return Kernel(name, DEVICE + "\n" + "\n".join(host) + "\n", tuple(out.args))
