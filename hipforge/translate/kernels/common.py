"""Pieces every generated HIP source shares: the prologue, block reductions, expression emission."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hipforge.translate.ir.values import Val, lit
from hipforge.translate.params import GenParams


@dataclass(frozen=True)
class Kernel:
    name: str  # the host function load_inline binds
    source: str  # device code and host function
    inputs: tuple[Val, ...]  # the tensors the host function takes, in order
    choices: dict[str, Any] = field(default_factory=dict)  # code-generation choices it resolved (GEMM tile)


PROLOGUE = """#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <climits>
#include <cstdint>
"""

# OP 0 sum, 1 max, 2 min, 3 product. Wavefront width comes from warpSize (64 on AMD, 32 on NVIDIA), never a
# constant; `red` holds blockDim.x + 1 floats: one partial per wavefront, then the total.
BLOCK_REDUCE = """template <int OP> __device__ __forceinline__ float hf_combine(float a, float b) {
    return OP == 0 ? a + b : (OP == 1 ? fmaxf(a, b) : (OP == 2 ? fminf(a, b) : a * b));
}

template <int OP> __device__ __forceinline__ float hf_identity() {
    return OP == 0 ? 0.0f : (OP == 1 ? -INFINITY : (OP == 2 ? INFINITY : 1.0f));
}

template <int OP> __device__ float hf_block_reduce(float v, float* red) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v = hf_combine<OP>(v, __shfl_down(v, o));
    const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
    const int waves = (blockDim.x + warpSize - 1) / warpSize;
    __syncthreads();  // the previous reduction's readers are done with red[]
    if (lane == 0) red[wave] = v;
    __syncthreads();
    if (wave == 0) {
        v = lane < waves ? red[lane] : hf_identity<OP>();
        for (int o = warpSize / 2; o > 0; o >>= 1) v = hf_combine<OP>(v, __shfl_down(v, o));
        if (lane == 0) red[blockDim.x] = v;
    }
    __syncthreads();
    return red[blockDim.x];
}
"""

# The total over the threads that share a row (row_reduce.py's modes): 0 the whole block, 1 one wavefront
# (shuffles only, no barrier), 2 the threads of one column, threadIdx.x % tx alike (one thread when tx is
# the block). Every thread of the row gets the same total. Needs BLOCK_REDUCE; only row kernels carry it.
GROUP_REDUCE = """template <int OP> __device__ float hf_group_reduce(float v, float* red, int mode, int tx) {
    if (mode == 0) return hf_block_reduce<OP>(v, red);
    if (mode == 1) {
        for (int o = warpSize / 2; o > 0; o >>= 1) v = hf_combine<OP>(v, __shfl_down(v, o));
        return __shfl(v, 0);
    }
    if (tx == (int)blockDim.x) return v;
    __syncthreads();  // the previous reduction's readers are done with red[]
    red[threadIdx.x] = v;
    __syncthreads();
    float total = hf_identity<OP>();
    for (int k = threadIdx.x % tx; k < (int)blockDim.x; k += tx) total = hf_combine<OP>(total, red[k]);
    return total;
}
"""

# Mean and variance in one pass (Welford per thread, Chan et al. to merge), so a norm reads its rows twice,
# not three times. (n, mean, m2) are merged in place over the threads that share a row (the modes of
# hf_group_reduce); every thread gets the same totals. `red` holds 3 * blockDim.x floats.
WELFORD = """__device__ __forceinline__ void hf_welford_merge(float& n, float& mean, float& m2, float nb, float meanb,
                                                 float m2b) {
    if (nb == 0.0f) return;
    const float total = n + nb, delta = meanb - mean, share = nb / total;
    mean += delta * share;
    m2 += m2b + delta * delta * n * share;
    n = total;
}

__device__ void hf_group_welford(float& n, float& mean, float& m2, float* red, int mode, int tx) {
    if (mode == 2 && tx == (int)blockDim.x) return;  // a thread per column: already whole
    const int width = blockDim.x;
    int first = threadIdx.x % tx, step = tx, limit = width;  // mode 2: this column's entries
    if (mode != 2) {
        for (int o = warpSize / 2; o > 0; o >>= 1) {
            const float nb = __shfl_down(n, o), meanb = __shfl_down(mean, o), m2b = __shfl_down(m2, o);
            hf_welford_merge(n, mean, m2, nb, meanb, m2b);
        }
        if (mode == 1) {
            n = __shfl(n, 0); mean = __shfl(mean, 0); m2 = __shfl(m2, 0);
            return;
        }
        first = 0, step = 1, limit = (width + warpSize - 1) / warpSize;  // mode 0: one entry per wavefront
    }
    __syncthreads();  // the previous reduction's readers are done with red[]
    if (mode == 2 || threadIdx.x % warpSize == 0) {
        const int slot = mode == 2 ? (int)threadIdx.x : (int)threadIdx.x / warpSize;
        red[slot] = n; red[width + slot] = mean; red[2 * width + slot] = m2;
    }
    __syncthreads();
    n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int k = first; k < limit; k += step)
        hf_welford_merge(n, mean, m2, red[k], red[width + k], red[2 * width + k]);
}
"""

# Where a broadcast operand (`count` values, each repeated over `inner` consecutive outputs) is read for flat
# output index i. A 64-bit division is a long emulated sequence on both vendors and would make a memory-bound
# epilogue ALU-bound, so the division is 32-bit whenever the numbers fit, and a float4 of outputs pays for
# one quotient, then walks across inner boundaries.
BROADCAST_INDEX = """__device__ __forceinline__ void hf_divmod(int64_t i, int64_t d, int64_t& q, int64_t& r) {
    if ((((uint64_t)i | (uint64_t)d) >> 32) == 0) {
        const uint32_t q32 = (uint32_t)i / (uint32_t)d;
        q = q32, r = (uint32_t)i - q32 * (uint32_t)d;
    } else {
        q = i / d, r = i - q * d;
    }
}

__device__ __forceinline__ int64_t hf_bcast(int64_t i, int64_t inner, int64_t count) {
    int64_t q, r, wraps, c;
    hf_divmod(i, inner, q, r);
    hf_divmod(q, count, wraps, c);
    return c;
}

__device__ __forceinline__ void hf_bcast4(int64_t e, int64_t inner, int64_t count, int64_t* j) {
    int64_t q, r, wraps, c;
    hf_divmod(e, inner, q, r);
    hf_divmod(q, count, wraps, c);
    for (int k = 0; k < 4; ++k) {
        j[k] = c;
        if (++r == inner) {
            r = 0;
            if (++c == count) c = 0;
        }
    }
}
"""

# (value, index) reduction for argmax/argmin; ties go to the lower index, as in torch.
BLOCK_ARG_REDUCE = """template <bool MAX> __device__ __forceinline__ bool hf_better(float v, int i, float w, int k) {
    return (MAX ? w > v : w < v) || (w == v && k < i);
}

template <bool MAX> __device__ int hf_block_arg_reduce(float v, int i, float* red, int* redi) {
    for (int o = warpSize / 2; o > 0; o >>= 1) {
        const float w = __shfl_down(v, o);
        const int k = __shfl_down(i, o);
        if (hf_better<MAX>(v, i, w, k)) { v = w; i = k; }
    }
    const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
    const int waves = (blockDim.x + warpSize - 1) / warpSize;
    __syncthreads();
    if (lane == 0) { red[wave] = v; redi[wave] = i; }
    __syncthreads();
    if (wave == 0) {
        v = lane < waves ? red[lane] : (MAX ? -INFINITY : INFINITY);
        i = lane < waves ? redi[lane] : INT_MAX;
        for (int o = warpSize / 2; o > 0; o >>= 1) {
            const float w = __shfl_down(v, o);
            const int k = __shfl_down(i, o);
            if (hf_better<MAX>(v, i, w, k)) { v = w; i = k; }
        }
        if (lane == 0) redi[blockDim.x] = i;
    }
    __syncthreads();
    return redi[blockDim.x];
}
"""


def emit_ew(v: Val, names: dict[int, str], params: GenParams) -> str:
    """`const float vN = <expr>;` for an elementwise value whose operands all have names."""
    operands = [names[id(a)] if isinstance(a, Val) else lit(a) for a in v.args]
    expr = v.fn.format(*operands)
    if params.fast_math:  # hardware intrinsics: faster, a few ulp less accurate
        expr = expr.replace("expf(", "__expf(").replace("logf(", "__logf(")
    names[id(v)] = f"v{len(names)}"
    return f"const float {names[id(v)]} = {expr};"


def size_product(tensor: str, dims: range) -> str:
    """C++ product of a tensor's sizes over `dims` (1 when empty), read at run time."""
    return " * ".join(f"{tensor}.size({d})" for d in dims) or "(int64_t)1"


def grid_for(work: str, per_block: int) -> str:
    return f"(int)std::max<int64_t>(1, std::min<int64_t>(({work} + {per_block - 1}) / {per_block}, 65535))"
