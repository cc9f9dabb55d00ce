"""Inclusive scans (cumsum, cumprod, reversed): one block per row, a block-wide scan per chunk.

Each chunk of blockDim.x elements is scanned within wavefronts (__shfl_up over warpSize lanes),
then across them through shared memory; a running carry links the chunks of a row. Partials are
kept in double: a long row's running total would otherwise drift past fp32 tolerances. A reversed
scan (flip, cumsum, flip) walks the row from its end instead of materializing two flips.
"""

from __future__ import annotations

from typing import Any

from hipforge.translate.ir.values import Val
from hipforge.translate.kernels.common import Kernel, size_product
from hipforge.translate.params import GenParams

DEVICE = """__global__ void %(name)s_kernel(const float* __restrict__ x, float* __restrict__ y,
                              int64_t rows, int64_t R, int64_t inner) {
    __shared__ double wave_sums[%(block)d];
    const int lane = threadIdx.x %% warpSize, wave = threadIdx.x / warpSize;
    const int waves = (blockDim.x + warpSize - 1) / warpSize;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t base = (row / inner) * R * inner + row %% inner;
        double carry = %(ident)s;
        for (int64_t j0 = 0; j0 < R; j0 += blockDim.x) {
            const int64_t j = j0 + threadIdx.x, at = %(at)s;
            double v = j < R ? (double)x[base + at * inner] : %(ident)s;
            for (int o = 1; o < warpSize; o <<= 1) {
                const double t = __shfl_up(v, o);
                if (lane >= o) v = v %(op)s t;
            }
            if (lane == warpSize - 1) wave_sums[wave] = v;
            __syncthreads();
            if (wave == 0) {  // scan the per-wavefront totals (at most warpSize of them)
                double s = lane < waves ? wave_sums[lane] : %(ident)s;
                for (int o = 1; o < warpSize; o <<= 1) {
                    const double t = __shfl_up(s, o);
                    if (lane >= o) s = s %(op)s t;
                }
                if (lane < waves) wave_sums[lane] = s;
            }
            __syncthreads();
            if (wave > 0) v = v %(op)s wave_sums[wave - 1];
            if (j < R) y[base + at * inner] = (float)(carry %(op)s v);
            carry = carry %(op)s wave_sums[waves - 1];
            __syncthreads();  // every thread has read wave_sums before the next chunk writes it
        }
    }
}
"""


def scan(x: Val, dim: int, op: str, reverse: bool = False) -> Val:
    """cumsum (op "+") or cumprod (op "*") of any float tensor along `dim`, as a kernel value."""
    dim %= len(x.shape)
    return Val("kernel", x.shape, (x,), fn="cumsum" if op == "+" else "cumprod",
               extra={"scan": (dim, op, reverse), "build": scan_kernel})


def flip(x: Val, dims: Any) -> Val:
    """x.flip(dims); flip(scan(flip(x))) along one dim is the reversed scan, without either flip."""
    dims = sorted({d % len(x.shape) for d in (dims if isinstance(dims, tuple | list) else [dims])})
    scanned = x.extra.get("scan")
    inner = x.args[0] if scanned else None
    if scanned and dims == [scanned[0]] and isinstance(inner, Val) and inner.extra.get("flip") == dims:
        return scan(inner.args[0], scanned[0], scanned[1], not scanned[2])
    return Val("aten", x.shape, (x,), fn=f"{{0}}.flip({tuple(dims)})", kind="flip", extra={"flip": dims})


def scan_kernel(name: str, out: Val, params: GenParams) -> Kernel:
    (x,) = out.args
    dim, op, reverse = out.extra["scan"]
    rank = len(x.shape)
    device = DEVICE % {"name": name, "block": params.block_size, "op": op, "ident": "0.0" if op == "+" else "1.0",
                       "at": "R - 1 - j" if reverse else "j"}
    host = [f"torch::Tensor {name}(torch::Tensor x) {{",
            "    auto X = x.contiguous();",
            "    auto Y = torch::empty_like(X);",
            "    if (X.numel() == 0) return Y;",
            f"    const int64_t R = X.size({dim}), inner = {size_product('X', range(dim + 1, rank))};",
            "    const int64_t rows = X.numel() / R;",
            "    const int blocks = (int)std::min<int64_t>(rows, 65535);",
            f"    {name}_kernel<<<blocks, {params.block_size}>>>(X.data_ptr<float>(), Y.data_ptr<float>(), "
            "rows, R, inner);",
            "    return Y;", "}"]
    return Kernel(name, device + "\n" + "\n".join(host) + "\n", (x,))
