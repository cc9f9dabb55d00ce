"""One fused row kernel: a block per row of the reduced dim, elementwise work recomputed per pass.

Values are indexed by their class (hip_classes.py): per element, per row, or one scalar.
A reduction over an inner dim (rows strided in memory) gives each thread a row instead: threads
next to each other read neighbouring addresses at every step, so loads stay coalesced.
"""

from __future__ import annotations

from hipforge.agents.translate.hip_classes import PER_ELEMENT, classify, closure, out_shape
from hipforge.agents.translate.hip_common import Kernel, emit_ew, grid_for, size_product
from hipforge.agents.translate.hip_ew import broadcast_span, span_host, span_load, span_params
from hipforge.agents.translate.ir import REDUCE_INIT, Val
from hipforge.agents.translate.params import GenParams

OPS = {"sum": 0, "mean": 0, "batchmean": 0, "max": 1, "min": 2, "prod": 3}
SCALE = {"mean": " / (float)R", "batchmean": " / (float)batch"}  # batchmean: a sum over the size of dim 0


def row_kernel(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> Kernel:
    reduces = [m for m in members if m.op == "reduce"]
    d, cls = classify(members, inputs, out)
    dim, shape, rank = d.dim, d.shape, len(d.shape)
    names = {id(v): f"x{k}" for k, v in enumerate(inputs)}
    anchor = f"c{next(k for k, v in enumerate(inputs) if cls[id(v)] == 'full')}"
    per_thread = dim is not None and dim + d.span != rank  # strided rows: one thread each
    spans = {k: broadcast_span(v.shape, shape) for k, v in enumerate(inputs) if cls[id(v)] == "bcast"}

    def load(k: int) -> str:
        if k in spans:
            return f"const float x{k} = {span_load(k, spans[k], 'e')};"
        index = {"full": "e", "col": "j", "row": "row", "uniform": "0"}[cls[id(inputs[k])]]
        return f"const float x{k} = in{k}[{index}];"

    def row_loop(target: Val, step: list[str]) -> list[str]:
        need = closure(target, members, cls)
        local = dict(names)
        lines = [f"#pragma unroll {params.unroll}",
                 "for (int64_t j = 0; j < R; ++j) {" if per_thread else
                 "for (int64_t j = threadIdx.x; j < R; j += blockDim.x) {",
                 "    const int64_t e = base + j * inner;"]
        lines += [f"    {load(k)}" for k, v in enumerate(inputs) if id(v) in need]
        lines += [f"    {emit_ew(m, local, params)}" for m in members if id(m) in need]
        return lines + [f"    {s.format(local[id(target)])}" for s in step] + ["}"]

    body = [f"    {load(k)}" for k, v in enumerate(inputs) if cls[id(v)] in ("row", "uniform")]
    for m in members:
        if m.op == "ew" and cls[id(m)] not in PER_ELEMENT:
            body.append(emit_ew(m, names, params))
        elif m.op == "reduce":
            body += _reduction(m, names, row_loop, per_thread)
    if cls[id(out)] == "full":
        body += row_loop(out, ["out[e] = {};"])
    else:
        body.append(f"{'' if per_thread else 'if (threadIdx.x == 0) '}out[row] = {names[id(out)]};")
    needs_batch = any(r.fn == "batchmean" for r in reduces)
    out_type = "int64_t" if out.integer else "float"
    span_c, span_args = span_params(list(spans.values()))
    params_c = ", ".join([f"{out_type}* __restrict__ out"]
                         + [f"const float* __restrict__ in{k}" for k in range(len(inputs))]
                         + ["int64_t rows", "int64_t R", "int64_t inner", "int64_t batch"] + span_c)
    shared = [] if per_thread else [f"    __shared__ float red[{params.block_size + 1}];"]
    if any(r.fn.startswith("arg") for r in reduces) and not per_thread:
        shared.append(f"    __shared__ int redi[{params.block_size + 1}];")
    rows_loop = ("for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < rows; "
                 "row += (int64_t)gridDim.x * blockDim.x) {" if per_thread else
                 "for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {")
    kernel = [f"__global__ void {name}_kernel({params_c}) {{", *shared, f"    {rows_loop}",
              "        const int64_t base = (row / inner) * R * inner + row % inner;",
              *(f"        {line}" for line in body), "    }", "}"]
    if dim is None:
        sizes = ["    const int64_t R = n, inner = 1, rows = 1;"]
    else:
        sizes = [f"    const int64_t R = {size_product(anchor, range(dim, dim + d.span))};",
                 f"    const int64_t inner = {size_product(anchor, range(dim + d.span, rank))};",
                 "    const int64_t rows = n / R;"]
    launch_args = ", ".join([f"out.data_ptr<{out_type}>()"] + [f"c{k}.data_ptr<float>()" for k in range(len(inputs))]
                            + ["rows", "R", "inner", f"{anchor}.size(0)" if needs_batch else "1"] + span_args)
    blocks = grid_for("rows", params.block_size) if per_thread else "(int)std::min<int64_t>(rows, 65535)"
    host = [f"torch::Tensor {name}({', '.join(f'torch::Tensor x{k}' for k in range(len(inputs)))}) {{",
            *(f"    auto c{k} = x{k}.contiguous();" for k in range(len(inputs))),
            f"    const int64_t n = {anchor}.numel();",
            f"    auto out = torch::empty({out_shape(out, cls[id(out)] == 'full', anchor, d)}, "
            f"{anchor}.options(){'.dtype(torch::kLong)' if out.integer else ''});",
            "    if (n == 0) return out;", *sizes, *span_host(list(spans.values()), anchor, rank),
            f"    const int blocks = {blocks};",
            f"    {name}_kernel<<<blocks, {params.block_size}>>>({launch_args});",
            "    return out;", "}"]
    return Kernel(name, "\n".join(kernel + [""] + host) + "\n", tuple(inputs))


def _reduction(m: Val, names: dict[int, str], row_loop, per_thread: bool) -> list[str]:
    var = f"v{len(names)}"
    if m.fn.startswith("arg"):
        better = ">" if m.fn == "argmax" else "<"
        lines = [f"float best_{var} = {REDUCE_INIT[m.fn[3:]]}; int arg_{var} = INT_MAX;"]
        lines += row_loop(m.args[0], [f"if ({{0}} {better} best_{var} || arg_{var} == INT_MAX) "
                                      f"{{{{ best_{var} = {{0}}; arg_{var} = (int)j; }}}}"])
        lines.append(f"const int64_t {var} = arg_{var};" if per_thread else
                     f"const int64_t {var} = hf_block_arg_reduce<{str(m.fn == 'argmax').lower()}>"
                     f"(best_{var}, arg_{var}, red, redi);")
    else:
        op = OPS[m.fn]
        lines = [f"float acc_{var} = {REDUCE_INIT[m.fn]};"]
        lines += row_loop(m.args[0], [f"acc_{var} = hf_combine<{op}>(acc_{var}, {{0}});"])
        total = f"acc_{var}" if per_thread else f"hf_block_reduce<{op}>(acc_{var}, red)"
        lines.append(f"const float {var} = {total}{SCALE.get(m.fn, '')};")
    names[id(m)] = var
    return lines
