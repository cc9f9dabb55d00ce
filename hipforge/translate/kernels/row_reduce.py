"""One fused row kernel: the threads of a row reduce it, elementwise work recomputed per pass.

Values are indexed by their class (value_classes.py): per element, per row, or one scalar.
The host picks how threads share rows at run time (sizes are only known then), one mode per launch:
0 a block per row (long contiguous rows); 1 a wavefront per row (short contiguous rows: a layer norm
over 64 values must not leave most of a block idle and pay barriers); 2 strided rows (a reduction
over an outer dim, e.g. batch norm over the batch) as columns: `tx` neighbouring columns per block,
so loads stay coalesced, and blockDim / tx threads down each column so that a few thousand columns
still fill the GPU. Argmax/argmin keep one block per row, or one thread per column.
"""

from __future__ import annotations

from hipforge.translate.ir.values import REDUCE_INIT, Val
from hipforge.translate.kernels.common import Kernel, emit_ew, size_product
from hipforge.translate.kernels.elementwise import broadcast_span, span_host, span_load, span_params
from hipforge.translate.kernels.value_classes import PER_ELEMENT, classify, closure, out_shape
from hipforge.translate.params import GenParams

OPS = {"sum": 0, "mean": 0, "batchmean": 0, "max": 1, "min": 2, "prod": 3}
SCALE = {"mean": " / (float)R", "batchmean": " / (float)batch"}  # batchmean: a sum over the size of dim 0


def row_kernel(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> Kernel:
    reduces = [m for m in members if m.op == "reduce"]
    d, cls = classify(members, inputs, out)
    dim, shape, rank = d.dim, d.shape, len(d.shape)
    names = {id(v): f"x{k}" for k, v in enumerate(inputs)}
    anchor = f"c{next(k for k, v in enumerate(inputs) if cls[id(v)] == 'full')}"
    spans = {k: broadcast_span(v.shape, shape) for k, v in enumerate(inputs) if cls[id(v)] == "bcast"}

    def load(k: int) -> str:
        if k in spans:
            return f"const float x{k} = {span_load(k, spans[k], 'e')};"
        if cls[id(inputs[k])] == "row":  # a thread past the last row has no row to read
            return f"const float x{k} = live ? in{k}[row] : 0.0f;"
        index = {"full": "e", "col": "j", "uniform": "0"}[cls[id(inputs[k])]]
        return f"const float x{k} = in{k}[{index}];"

    def row_loop(target: Val, step: list[str]) -> list[str]:
        need = closure(target, members, cls)
        local = dict(names)
        lines = [f"#pragma unroll {params.unroll}", "for (int64_t j = lane; live && j < R; j += group) {",
                 "    const int64_t e = base + j * inner;"]
        lines += [f"    {load(k)}" for k, v in enumerate(inputs) if id(v) in need]
        lines += [f"    {emit_ew(m, local, params)}" for m in members if id(m) in need]
        return lines + [f"    {s.format(local[id(target)])}" for s in step] + ["}"]

    body = [f"    {load(k)}" for k, v in enumerate(inputs) if cls[id(v)] in ("row", "uniform")]
    for m in members:
        if m.op == "ew" and cls[id(m)] not in PER_ELEMENT:
            body.append(emit_ew(m, names, params))
        elif m.op == "reduce" and (pair := moments_pair(m, reduces)):
            if id(m) not in names:  # not already computed with its partner
                body += _moments(*pair, names, row_loop)
        elif m.op == "reduce":
            body += _reduction(m, names, row_loop)
    if cls[id(out)] == "full":
        body += row_loop(out, ["out[e] = {};"])
    else:
        body.append(f"if (live && lane == 0) out[row] = {names[id(out)]};")
    needs_batch = any(r.fn == "batchmean" for r in reduces)
    arg = any(r.fn.startswith("arg") for r in reduces)
    out_type = "int64_t" if out.integer else "float"
    span_c, span_args = span_params(list(spans.values()))
    params_c = ", ".join([f"{out_type}* __restrict__ out"]
                         + [f"const float* __restrict__ in{k}" for k in range(len(inputs))]
                         + ["int64_t rows", "int64_t R", "int64_t inner", "int64_t batch"] + span_c
                         + ["int mode", "int tx"])
    shared = [f"    __shared__ float red[{params.block_size + 1}];"]
    if arg:
        shared.append(f"    __shared__ int redi[{params.block_size + 1}];")
    if any(r.fn == "var" for r in reduces):
        shared.append(f"    __shared__ float redw[{3 * params.block_size}];")
    kernel = [f"__global__ void {name}_kernel({params_c}) {{", *shared, *ROW_SHARING,
              "    for (int64_t first = (int64_t)blockIdx.x * per_block; first < rows; "
              "first += (int64_t)gridDim.x * per_block) {",
              "        const int64_t row = first + slot;",
              "        const bool live = row < rows;",
              "        const int64_t base = (row / inner) * R * inner + row % inner;",
              *(f"        {line}" for line in body), "    }", "}"]
    if dim is None:
        sizes = ["    const int64_t R = n, inner = 1, rows = 1;"]
    else:
        sizes = [f"    const int64_t R = {size_product(anchor, range(dim, dim + d.span))};",
                 f"    const int64_t inner = {size_product(anchor, range(dim + d.span, rank))};",
                 "    const int64_t rows = n / R;"]
    launch_args = ", ".join([f"out.data_ptr<{out_type}>()"] + [f"c{k}.data_ptr<float>()" for k in range(len(inputs))]
                            + ["rows", "R", "inner", f"{anchor}.size(0)" if needs_batch else "1"] + span_args
                            + ["mode", "tx"])
    host = [f"torch::Tensor {name}({', '.join(f'torch::Tensor x{k}' for k in range(len(inputs)))}) {{",
            *(f"    auto c{k} = x{k}.contiguous();" for k in range(len(inputs))),
            f"    const int64_t n = {anchor}.numel();",
            f"    auto out = torch::empty({out_shape(out, cls[id(out)] == 'full', anchor, d)}, "
            f"{anchor}.options(){'.dtype(torch::kLong)' if out.integer else ''});",
            "    if (n == 0) return out;", *sizes, *span_host(list(spans.values()), anchor, rank),
            *_choose_mode(params.block_size, arg),
            f"    {name}_kernel<<<blocks, {params.block_size}>>>({launch_args});",
            "    return out;", "}"]
    return Kernel(name, "\n".join(kernel + [""] + host) + "\n", tuple(inputs))


# which rows a thread works on, and its lane among the threads of its row (see the module's docstring)
ROW_SHARING = [
    "    const int group = mode == 0 ? (int)blockDim.x : mode == 1 ? warpSize : (int)blockDim.x / tx;",
    "    const int t = threadIdx.x;",
    "    const int lane = mode == 0 ? t : mode == 1 ? t % warpSize : t / tx;",
    "    const int slot = mode == 0 ? 0 : mode == 1 ? t / warpSize : t % tx;",
    "    const int per_block = blockDim.x / group;",
]


def _choose_mode(block: int, arg: bool) -> list[str]:
    """Host lines picking the launch's mode, tx and grid from the run-time sizes."""
    if arg:
        pick = [f"    const int mode = inner == 1 ? 0 : 2, tx = {block};"]
    else:
        pick = ["    const int mode = inner != 1 ? 2 : (R <= 256 || (R <= 4096 && rows >= 16384)) ? 1 : 0;",
                f"    int tx = R < 64 ? {block} : 32;  // short columns: a thread each",
                "    // narrower column tiles (down to 32-byte runs) until the grid has ~512 blocks",
                f"    while (tx > 8 && tx < {block} && (rows + tx - 1) / tx < 512 && {block} / (tx / 2) <= R) tx /= 2;"]
    # rows a block takes at once; 32 is the narrowest wavefront: on 64-wide ones the grid-stride loop covers the rest
    return pick + [f"    const int64_t per_block = mode == 0 ? 1 : mode == 1 ? {block // 32} : tx;",
                   "    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((rows + per_block - 1) / "
                   "per_block, 65535));"]


def moments_pair(m: Val, reduces: list[Val]) -> tuple[Val | None, Val] | None:
    """(mean, variance) over the values `m` reduces, when `m` is either and the group has the variance."""
    def same(fn: str) -> Val | None:
        return m if m.fn == fn else next((r for r in reduces if r.fn == fn and r.args[0] is m.args[0]), None)

    var = same("var") if m.fn in ("mean", "var") else None
    return (same("mean"), var) if var is not None else None


def _moments(mean: Val | None, var: Val, names: dict[int, str], row_loop) -> list[str]:
    """A variance, and the mean over the same values if the group has one, in one Welford pass."""
    tag = f"w{len(names)}"
    lines = [f"float n_{tag} = 0.0f, mean_{tag} = 0.0f, m2_{tag} = 0.0f;"]
    lines += row_loop(var.args[0], [f"n_{tag} += 1.0f; const float d_{tag} = {{0}} - mean_{tag};",
                                    f"mean_{tag} += d_{tag} / n_{tag}; m2_{tag} += d_{tag} * ({{0}} - mean_{tag});"])
    lines += [f"hf_group_welford(n_{tag}, mean_{tag}, m2_{tag}, redw, mode, tx);",
              f"const float var_{tag} = m2_{tag} / (float)R;"]
    if mean is not None:
        names[id(mean)] = f"mean_{tag}"
    names[id(var)] = f"var_{tag}"
    return lines


def _reduction(m: Val, names: dict[int, str], row_loop) -> list[str]:
    var = f"v{len(names)}"
    if m.fn.startswith("arg"):
        better = ">" if m.fn == "argmax" else "<"
        lines = [f"float best_{var} = {REDUCE_INIT[m.fn[3:]]}; int arg_{var} = INT_MAX;"]
        lines += row_loop(m.args[0], [f"if ({{0}} {better} best_{var} || arg_{var} == INT_MAX) "
                                      f"{{{{ best_{var} = {{0}}; arg_{var} = (int)j; }}}}"])
        lines.append(f"const int64_t {var} = mode == 2 ? (int64_t)arg_{var} : hf_block_arg_reduce<"
                     f"{str(m.fn == 'argmax').lower()}>(best_{var}, arg_{var}, red, redi);")
    else:
        op = OPS[m.fn]
        lines = [f"float acc_{var} = {REDUCE_INIT[m.fn]};"]
        lines += row_loop(m.args[0], [f"acc_{var} = hf_combine<{op}>(acc_{var}, {{0}});"])
        lines.append(f"const float {var} = hf_group_reduce<{op}>(acc_{var}, red, mode, tx){SCALE.get(m.fn, '')};")
    names[id(m)] = var
    return lines
