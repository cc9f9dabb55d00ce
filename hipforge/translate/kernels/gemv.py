"""The matrix-vector path of the GEMM: out[row] = mat[row, :] . vec (+ bias), a block per row.

Taken at run time by the GEMM's host function when N == 1 (mat = A, stored (M, K)) or M == 1 against a
B stored (N, K) (mat = B): the tiled GEMM would fill 1/32 of its tiles and run M/32 blocks. Threads
stride over K (float4 loads when K % 4 == 0 and both rows are 16-byte aligned), keep per-thread
partials, then sum them in a tree (warp shuffles over warpSize lanes, one partial per wavefront
through shared memory): rounding grows with K / blockDim + log(blockDim), not with K.
"""

from __future__ import annotations

from hipforge.translate.params import GenParams

DEVICE = """template <int BS>
__global__ void __launch_bounds__(BS) gemv_kernel(const float* __restrict__ mat, const float* __restrict__ vec,
                                                  const float* __restrict__ bias, int64_t bias_stride,
                                                  float* __restrict__ out, int64_t rows, int64_t K, int vec4) {
    __shared__ float red[BS + 1];  // hf_block_reduce: one partial per wavefront, then the total
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* m = mat + row * K;  // 64-bit: M * K reaches 2^31 at KernelBench's sizes
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        const int64_t k4 = vec4 ? K / 4 : 0;
#pragma unroll 4
        for (int64_t j = threadIdx.x; j < k4; j += BS) {
            const float4 x = reinterpret_cast<const float4*>(m)[j], y = reinterpret_cast<const float4*>(vec)[j];
            s0 += x.x * y.x; s1 += x.y * y.y; s2 += x.z * y.z; s3 += x.w * y.w;
        }
#pragma unroll 4
        for (int64_t j = k4 * 4 + threadIdx.x; j < K; j += BS) s0 += m[j] * vec[j];
        const float total = hf_block_reduce<0>((s0 + s1) + (s2 + s3), red);
        if (threadIdx.x == 0) out[row] = total + (bias ? bias[row * bias_stride] : 0.0f);
    }
}
"""


def gemv_branches(trans_a: bool, trans_b: bool, params: GenParams) -> list[str]:
    """Host lines (after A, B, C, M, N, K and bias_ptr are set) that run the GEMV and return C when it applies.

    N == 1: B is K contiguous floats whether stored (K, 1) or (1, K), and A's rows are contiguous unless
    A is stored transposed. M == 1: A is K contiguous floats, B's rows are contiguous when B is (N, K).
    """
    cases = []
    if not trans_a:  # bias along N: one value for every row
        cases.append(("N == 1", "A", "B", "M", "0"))
    if trans_b:  # the output's N entries are the rows of B, each with its bias
        cases.append(("M == 1", "B", "A", "N", "1"))
    bs = params.block_size
    lines = []
    for cond, mat, vec, rows, bias_stride in cases:
        aligned = (f"((reinterpret_cast<std::uintptr_t>({mat}.data_ptr<float>()) | "
                   f"reinterpret_cast<std::uintptr_t>({vec}.data_ptr<float>())) % 16) == 0")
        vec4 = f"K % 4 == 0 && {aligned}" if params.vector_width == 4 else "false"
        lines += [f"    if ({cond}) {{  // matrix-vector: a block per row of {mat}, tree-reduced over K",
                  f"        const int vec4 = {vec4};",
                  f"        gemv_kernel<{bs}><<<(int)std::min<int64_t>({rows}, 65535), {bs}>>>("
                  f"{mat}.data_ptr<float>(), {vec}.data_ptr<float>(), bias_ptr, {bias_stride}, C.data_ptr<float>(), "
                  f"{rows}, K, vec4);",
                  "        return C;", "    }"]
    return lines
