"""Reductions over every element (losses): a two-stage reduction instead of one block for all of it.

Stage one: every block reduces a grid-stride share of the elements to one partial. Stage two: one
block reduces the partials and does the scalar math after the reduction (1 - x, / batch, ...).
Groups of another shape (per-row reductions, several reductions) go to the row kernel.
"""

from __future__ import annotations

from hipforge.agents.translate.hip_common import Kernel, emit_ew
from hipforge.agents.translate.hip_row import OPS, SCALE, closure, input_class, member_class, out_shape, row_kernel
from hipforge.agents.translate.ir import REDUCE_INIT, Val
from hipforge.agents.translate.params import GenParams

MAX_PARTIALS = 1024  # stage two is one block: a few partials per thread


def reduction_kernel(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> Kernel:
    reduces = [m for m in members if m.op == "reduce"]
    if len(reduces) != 1 or reduces[0].dim is not None or reduces[0].integer:
        return row_kernel(name, members, inputs, out, params)
    red = reduces[0]
    shape = red.args[0].shape
    cls = {id(v): input_class(v, shape, (1,) * len(shape), None) for v in inputs}
    for m in members:
        cls[id(m)] = member_class(m, cls, shape, (1,) * len(shape))
    full_in = [k for k, v in enumerate(inputs) if cls[id(v)] == "full"]
    if cls[id(out)] == "full" or not full_in:
        return row_kernel(name, members, inputs, out, params)
    anchor, op = f"c{full_in[0]}", OPS[red.fn]
    need = closure(red.args[0], members, cls)
    names = {id(v): f"x{k}" for k, v in enumerate(inputs)}
    ins = ", ".join(f"const float* __restrict__ in{k}" for k in range(len(inputs)))
    loop_names = dict(names)
    loop = [f"        const float x{k} = in{k}[{'j' if cls[id(v)] == 'full' else '0'}];"
            for k, v in enumerate(inputs) if id(v) in need]
    loop += [f"        {emit_ew(m, loop_names, params)}" for m in members if id(m) in need]
    shared = f"    __shared__ float red[{params.block_size + 1}];"
    stage1 = [f"__global__ void {name}_partial(float* __restrict__ partial, {ins}, int64_t n) {{", shared,
              f"    float acc = {REDUCE_INIT[red.fn]};",
              "    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; "
              "j += (int64_t)gridDim.x * blockDim.x) {",
              *loop, f"        acc = hf_combine<{op}>(acc, {loop_names[id(red.args[0])]});", "    }",
              f"    acc = hf_block_reduce<{op}>(acc, red);",
              "    if (threadIdx.x == 0) partial[blockIdx.x] = acc;", "}"]
    names[id(red)] = f"v{len(names)}"
    after = [f"    const float x{k} = in{k}[0];" for k, v in enumerate(inputs) if cls[id(v)] == "uniform"]
    after += [f"    {emit_ew(m, names, params)}" for m in members if m.op == "ew" and cls[id(m)] != "full"]
    stage2 = [f"__global__ void {name}_final(float* __restrict__ out, const float* __restrict__ partial, int parts, "
              f"{ins}, int64_t R, int64_t batch) {{", shared,
              f"    float acc = {REDUCE_INIT[red.fn]};",
              f"    for (int j = threadIdx.x; j < parts; j += blockDim.x) acc = hf_combine<{op}>(acc, partial[j]);",
              f"    const float {names[id(red)]} = hf_block_reduce<{op}>(acc, red){SCALE.get(red.fn, '')};",
              *after, f"    if (threadIdx.x == 0) out[0] = {names[id(out)]};", "}"]
    per_block = params.block_size * params.elems_per_thread
    pointers = ", ".join(f"c{k}.data_ptr<float>()" for k in range(len(inputs)))
    host = [f"torch::Tensor {name}({', '.join(f'torch::Tensor x{k}' for k in range(len(inputs)))}) {{",
            *(f"    auto c{k} = x{k}.contiguous();" for k in range(len(inputs))),
            f"    const int64_t n = {anchor}.numel();",
            f"    auto out = torch::empty({out_shape(out, False, anchor, None, len(shape))}, {anchor}.options());",
            f"    const int parts = (int)std::max<int64_t>(1, std::min<int64_t>((n + {per_block - 1}) / {per_block}, "
            f"{MAX_PARTIALS}));",
            f"    auto partial = torch::empty({{parts}}, {anchor}.options());",
            f"    {name}_partial<<<parts, {params.block_size}>>>(partial.data_ptr<float>(), {pointers}, n);",
            f"    {name}_final<<<1, {params.block_size}>>>(out.data_ptr<float>(), partial.data_ptr<float>(), parts, "
            f"{pointers}, n, {anchor + '.size(0)' if red.fn == 'batchmean' else '1'});",
            "    return out;", "}"]
    return Kernel(name, "\n".join(stage1 + [""] + stage2 + [""] + host) + "\n", tuple(inputs))
