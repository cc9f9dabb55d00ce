"""Reductions over every element (losses): a two-stage reduction instead of one block for all of it.

Stage one: every block reduces a grid-stride share of the elements to one partial. Stage two: one
block reduces the partials and does the scalar math after the reduction (1 - x, / batch, ...).
Groups of another shape (per-row reductions, several reductions) go to the row kernel.
"""

from __future__ import annotations

from hipforge.agents.translate.hip_classes import PER_ELEMENT, classify, closure, out_shape
from hipforge.agents.translate.hip_common import Kernel, emit_ew
from hipforge.agents.translate.hip_ew import broadcast_span, span_host, span_load, span_params
from hipforge.agents.translate.hip_row import OPS, SCALE, row_kernel
from hipforge.agents.translate.ir import REDUCE_INIT, Val
from hipforge.agents.translate.params import GenParams

MAX_PARTIALS = 1024  # stage two is one block: a few partials per thread


def reduction_kernel(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> Kernel:
    reduces = [m for m in members if m.op == "reduce"]
    if len(reduces) != 1 or reduces[0].dim is not None or reduces[0].fn not in OPS:
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
    loop_names = dict(names)
    loop = [f"        const float x{k} = {span_load(k, spans[k], 'j') if k in spans else f'in{k}[j]'};"
            if cls[id(v)] != "uniform" else f"        const float x{k} = in{k}[0];"
            for k, v in enumerate(inputs) if id(v) in need]
    loop += [f"        {emit_ew(m, loop_names, params)}" for m in members if id(m) in need]
    shared = f"    __shared__ float red[{params.block_size + 1}];"
    partial_params = ", ".join([ins, "int64_t n", *span_c])
    stage1 = [f"__global__ void {name}_partial(float* __restrict__ partial, {partial_params}) {{", shared,
              f"    float acc = {REDUCE_INIT[red.fn]};",
              "    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; "
              "j += (int64_t)gridDim.x * blockDim.x) {",
              *loop, f"        acc = hf_combine<{op}>(acc, {loop_names[id(red.args[0])]});", "    }",
              f"    acc = hf_block_reduce<{op}>(acc, red);",
              "    if (threadIdx.x == 0) partial[blockIdx.x] = acc;", "}"]
    names[id(red)] = f"v{len(names)}"
    after = [f"    const float x{k} = in{k}[0];" for k, v in enumerate(inputs) if cls[id(v)] == "uniform"]
    after += [f"    {emit_ew(m, names, params)}" for m in members if m.op == "ew" and cls[id(m)] not in PER_ELEMENT]
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
            f"    auto out = torch::empty({out_shape(out, False, anchor, d)}, {anchor}.options());",
            *span_host(list(spans.values()), anchor, len(d.shape)),
            f"    const int parts = (int)std::max<int64_t>(1, std::min<int64_t>((n + {per_block - 1}) / {per_block}, "
            f"{MAX_PARTIALS}));",
            f"    auto partial = torch::empty({{parts}}, {anchor}.options());",
            f"    {name}_partial<<<parts, {params.block_size}>>>(partial.data_ptr<float>(), "
            f"{', '.join([pointers, 'n', *span_args])});",
            f"    {name}_final<<<1, {params.block_size}>>>(out.data_ptr<float>(), partial.data_ptr<float>(), parts, "
            f"{pointers}, n, {anchor + '.size(0)' if red.fn == 'batchmean' else '1'});",
            "    return out;", "}"]
    return Kernel(name, "\n".join(stage1 + [""] + stage2 + [""] + host) + "\n", tuple(inputs))
