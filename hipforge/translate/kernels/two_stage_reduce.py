"""Reductions of few, long rows (a whole tensor, a per-sample mean): two stages instead of a block per row.

Stage one: `parts` blocks per row each reduce a strided share of the row to one partial. Stage two: a
block per row reduces its partials and does the math after the reduction (1 - x, / batch, ...).
Chosen from the full-size shapes (`splits`); the kernels are correct at any size. Groups of another
shape (many rows, several reductions, a per-element result) go to the row kernel.
"""

from __future__ import annotations

import math

from hipforge.translate.ir.values import REDUCE_INIT, Val
from hipforge.translate.kernels.common import Kernel, emit_ew, size_product
from hipforge.translate.kernels.elementwise import broadcast_span, span_host, span_load, span_params
from hipforge.translate.kernels.row_reduce import OPS, SCALE, row_kernel
from hipforge.translate.kernels.value_classes import PER_ELEMENT, classify, closure, out_shape
from hipforge.translate.params import GenParams

MAX_PARTIALS = 1024  # stage one's blocks over all rows; stage two reduces a few partials per thread
# At most FEW_ROWS rows (of at least LONG_ROW values), a block per row leaves much of a GPU idle: a per-row
# result takes two stages. A group that goes on to per-element work is cut after such a reduction (its
# input read once more) only at CUT_ROWS or fewer, where a block per row would leave most of it idle.
FEW_ROWS, CUT_ROWS, LONG_ROW = 512, 64, 16384


def splits(r: Val, few: int = FEW_ROWS) -> bool:
    """Whether reduction `r` has at most `few` long contiguous rows at its full size (a whole tensor has one)."""
    shape = r.args[0].shape
    if r.dim is None:
        return True
    if r.dim + r.span != len(shape):  # strided rows: the row kernel's column tiles
        return False
    row = math.prod(shape[r.dim:])
    return math.prod(shape) // max(row, 1) <= few and row >= LONG_ROW


def reduction_kernel(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> Kernel:
    reduces = [m for m in members if m.op == "reduce"]
    if len(reduces) != 1 or reduces[0].fn not in OPS or not splits(reduces[0]):
        return row_kernel(name, members, inputs, out, params)
    red = reduces[0]
    d, cls = classify(members, inputs, out)
    if cls[id(out)] == "full":
        return row_kernel(name, members, inputs, out, params)
    anchor, op = f"c{next(k for k, v in enumerate(inputs) if cls[id(v)] == 'full')}", OPS[red.fn]
    need = closure(red.args[0], members, cls)
    names = {id(v): f"x{k}" for k, v in enumerate(inputs)}
    spans = {k: broadcast_span(v.shape, d.shape) for k, v in enumerate(inputs) if cls[id(v)] == "bcast"}
    span_c, span_args = span_params(list(spans.values()))
    ins = ", ".join([f"const float* __restrict__ in{k}" for k in range(len(inputs))])
    index = {"full": "e", "col": "j", "row": "row", "uniform": "0"}
    loop_names = dict(names)
    load = {k: span_load(k, spans[k], "e") if k in spans else f"in{k}[{index[cls[id(v)]]}]"
            for k, v in enumerate(inputs)}
    loop = [f"            const float x{k} = {load[k]};" for k, v in enumerate(inputs) if id(v) in need]
    loop += [f"            {emit_ew(m, loop_names, params)}" for m in members if id(m) in need]
    shared = f"    __shared__ float red[{params.block_size + 1}];"
    stage1 = [f"__global__ void {name}_partial(float* __restrict__ partial, {ins}, "
              f"{', '.join(['int64_t rows', 'int64_t R', 'int parts', *span_c])}) {{", shared,
              "    for (int64_t b = blockIdx.x; b < rows * parts; b += gridDim.x) {",
              "        const int64_t row = b / parts, chunk = b % parts;",
              *(f"        const float x{k} = in{k}[{index[cls[id(v)]]}];" for k, v in enumerate(inputs)
                if cls[id(v)] in ("row", "uniform")),
              f"        float acc = {REDUCE_INIT[red.fn]};",
              "        for (int64_t j = chunk * blockDim.x + threadIdx.x; j < R; j += (int64_t)parts * blockDim.x) {",
              "            const int64_t e = row * R + j;",
              *loop, f"            acc = hf_combine<{op}>(acc, {loop_names[id(red.args[0])]});", "        }",
              f"        acc = hf_block_reduce<{op}>(acc, red);",
              "        if (threadIdx.x == 0) partial[b] = acc;", "    }", "}"]
    names[id(red)] = f"v{len(names)}"
    after = [f"        const float x{k} = in{k}[{index[cls[id(v)]]}];" for k, v in enumerate(inputs)
             if cls[id(v)] in ("row", "uniform")]
    after += [f"        {emit_ew(m, names, params)}" for m in members if m.op == "ew" and cls[id(m)] not in PER_ELEMENT]
    stage2 = [f"__global__ void {name}_final(float* __restrict__ out, const float* __restrict__ partial, int parts, "
              f"{ins}, int64_t rows, int64_t R, int64_t batch) {{", shared,
              "    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {",
              f"        float acc = {REDUCE_INIT[red.fn]};",
              "        for (int j = threadIdx.x; j < parts; j += blockDim.x) "
              f"acc = hf_combine<{op}>(acc, partial[row * parts + j]);",
              f"        const float {names[id(red)]} = hf_block_reduce<{op}>(acc, red){SCALE.get(red.fn, '')};",
              *after, f"        if (threadIdx.x == 0) out[row] = {names[id(out)]};", "    }", "}"]
    pointers = ", ".join(f"c{k}.data_ptr<float>()" for k in range(len(inputs)))
    rank = len(d.shape)
    row_size = "n" if d.dim is None else size_product(anchor, range(d.dim, rank))
    host = [f"torch::Tensor {name}({', '.join(f'torch::Tensor x{k}' for k in range(len(inputs)))}) {{",
            *(f"    auto c{k} = x{k}.contiguous();" for k in range(len(inputs))),
            f"    const int64_t n = {anchor}.numel();",
            f"    auto out = torch::empty({out_shape(out, False, anchor, d)}, {anchor}.options());",
            f"    const int64_t R = {row_size}, rows = out.numel();",
            "    if (rows == 0) return out;",
            *span_host(list(spans.values()), anchor, rank),
            f"    const int64_t per_block = {params.block_size * params.elems_per_thread};",
            f"    const int parts = (int)std::max<int64_t>(1, std::min<int64_t>((R + per_block - 1) / per_block, "
            f"std::max<int64_t>(1, {MAX_PARTIALS} / rows)));",
            f"    auto partial = torch::empty({{rows * parts}}, {anchor}.options());",
            f"    {name}_partial<<<(int)std::min<int64_t>(rows * parts, 65535), {params.block_size}>>>("
            f"partial.data_ptr<float>(), {', '.join([pointers, 'rows', 'R', 'parts', *span_args])});",
            f"    {name}_final<<<(int)std::min<int64_t>(rows, 65535), {params.block_size}>>>(out.data_ptr<float>(), "
            f"partial.data_ptr<float>(), parts, {pointers}, rows, R, "
            f"{anchor + '.size(0)' if red.fn == 'batchmean' else '1'});",
            "    return out;", "}"]
    return Kernel(name, "\n".join(stage1 + [""] + stage2 + [""] + host) + "\n", tuple(inputs))
