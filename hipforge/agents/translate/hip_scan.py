"""An inclusive prefix sum for single-op cumsum tasks: one block per row, a block-wide scan per chunk.

Each chunk of blockDim.x elements is scanned within wavefronts (__shfl_up over warpSize lanes),
then across them through shared memory; a running carry links the chunks of a row. Partial sums
are kept in double: a long row's running total would otherwise drift past fp32 tolerances.
"""

from __future__ import annotations

from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_common import Kernel, size_product
from hipforge.agents.translate.ir import Val
from hipforge.agents.translate.params import GenParams

DEVICE = """__global__ void cumsum_kernel(const float* __restrict__ x, float* __restrict__ y,
                              int64_t rows, int64_t R, int64_t inner) {
    __shared__ double wave_sums[%(block)d];
    const int lane = threadIdx.x %% warpSize, wave = threadIdx.x / warpSize;
    const int waves = (blockDim.x + warpSize - 1) / warpSize;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t base = (row / inner) * R * inner + row %% inner;
        double carry = 0.0;
        for (int64_t j0 = 0; j0 < R; j0 += blockDim.x) {
            const int64_t j = j0 + threadIdx.x;
            double v = j < R ? (double)x[base + j * inner] : 0.0;
            for (int o = 1; o < warpSize; o <<= 1) {
                const double t = __shfl_up(v, o);
                if (lane >= o) v += t;
            }
            if (lane == warpSize - 1) wave_sums[wave] = v;
            __syncthreads();
            if (wave == 0) {  // scan the per-wavefront totals (at most warpSize of them)
                double s = lane < waves ? wave_sums[lane] : 0.0;
                for (int o = 1; o < warpSize; o <<= 1) {
                    const double t = __shfl_up(s, o);
                    if (lane >= o) s += t;
                }
                if (lane < waves) wave_sums[lane] = s;
            }
            __syncthreads();
            if (wave > 0) v += wave_sums[wave - 1];
            if (j < R) y[base + j * inner] = (float)(carry + v);
            carry += wave_sums[waves - 1];
            __syncthreads();  // every thread has read wave_sums before the next chunk writes it
        }
    }
}
"""


def cumsum_kernel(name: str, out: Val, params: GenParams) -> Kernel:
    (x,) = out.args
    if x.op != "input":
        raise Untranslatable("unsupported op: torch.cumsum of a computed tensor")
    dim, rank = out.extra["dim"] % len(x.shape), len(x.shape)
    host = [f"torch::Tensor {name}(torch::Tensor x) {{",
            "    auto X = x.contiguous();",
            "    auto Y = torch::empty_like(X);",
            "    if (X.numel() == 0) return Y;",
            f"    const int64_t R = X.size({dim}), inner = {size_product('X', range(dim + 1, rank))};",
            "    const int64_t rows = X.numel() / R;",
            "    const int blocks = (int)std::min<int64_t>(rows, 65535);",
            f"    cumsum_kernel<<<blocks, {params.block_size}>>>(X.data_ptr<float>(), Y.data_ptr<float>(), "
            "rows, R, inner);",
            "    return Y;", "}"]
    return Kernel(name, DEVICE % {"block": params.block_size} + "\n" + "\n".join(host) + "\n", (x,))
