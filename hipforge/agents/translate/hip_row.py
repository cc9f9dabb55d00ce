"""One fused row kernel: a block per row of the reduced dim, elementwise work recomputed per pass.

Every value of the group is `full` (one per element of the row), `col` (a parameter along the
reduced dim), `row` (one per row: reductions and math on them) or `uniform` (one scalar).
A reduction over an inner dim (rows strided in memory) gives each thread a row instead: threads
next to each other read neighbouring addresses at every step, so loads stay coalesced.
"""

from __future__ import annotations

from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_common import Kernel, emit_ew, grid_for, size_product
from hipforge.agents.translate.ir import REDUCE_INIT, Val
from hipforge.agents.translate.params import GenParams

OPS = {"sum": 0, "mean": 0, "batchmean": 0, "max": 1, "min": 2}
SCALE = {"mean": " / (float)R", "batchmean": " / (float)batch"}  # batchmean: a sum over the size of dim 0


def row_kernel(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> Kernel:
    reduces = [m for m in members if m.op == "reduce"]
    dims = {(r.dim, r.args[0].shape) for r in reduces}
    if len(dims) != 1:
        raise Untranslatable("reductions over different dims in one fused group")
    dim, shape = dims.pop()
    rank = len(shape)
    keep = tuple(1 if k == dim else s for k, s in enumerate(shape)) if dim is not None else (1,) * rank
    cls = {id(v): input_class(v, shape, keep, dim) for v in inputs}
    for m in members:
        cls[id(m)] = member_class(m, cls, shape, keep)
    if any(m.integer and m is not out for m in members):
        raise Untranslatable("math on the result of argmax/argmin")
    names = {id(v): f"x{k}" for k, v in enumerate(inputs)}
    full_in = [k for k, v in enumerate(inputs) if cls[id(v)] == "full"]
    if not full_in:
        raise Untranslatable(f"no operand of the fused group has the reduced shape {shape}")
    anchor = f"c{full_in[0]}"
    per_thread = dim is not None and dim != rank - 1  # strided rows: one thread each

    def load(k: int) -> str:
        index = {"full": "e", "col": "j", "row": "row", "uniform": "0"}[cls[id(inputs[k])]]
        return f"const float x{k} = in{k}[{index}];"

    def row_loop(target: Val, step: list[str]) -> list[str]:
        need = closure(target, members, cls)
        local = dict(names)
        lines = [f"#pragma unroll {params.unroll}",
                 "for (int64_t j = 0; j < R; ++j) {" if per_thread else
                 "for (int64_t j = threadIdx.x; j < R; j += blockDim.x) {",
                 "    const int64_t e = base + j * inner;"]
        lines += [f"    {load(k)}" for k, v in enumerate(inputs) if id(v) in need and cls[id(v)] in ("full", "col")]
        lines += [f"    {emit_ew(m, local, params)}" for m in members if id(m) in need]
        return lines + [f"    {s.format(local[id(target)])}" for s in step] + ["}"]

    body = [f"    {load(k)}" for k, v in enumerate(inputs) if cls[id(v)] in ("row", "uniform")]
    for m in members:
        if m.op == "ew" and cls[id(m)] != "full":
            body.append(emit_ew(m, names, params))
        elif m.op == "reduce":
            body += _reduction(m, names, row_loop, per_thread)
    if cls[id(out)] == "full":
        body += row_loop(out, ["out[e] = {};"])
    else:
        body.append(f"{'' if per_thread else 'if (threadIdx.x == 0) '}out[row] = {names[id(out)]};")
    needs_batch = any(r.fn == "batchmean" for r in reduces)
    out_type = "int64_t" if out.integer else "float"
    params_c = ", ".join([f"{out_type}* __restrict__ out"]
                         + [f"const float* __restrict__ in{k}" for k in range(len(inputs))]
                         + ["int64_t rows", "int64_t R", "int64_t inner", "int64_t batch"])
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
        sizes = [f"    const int64_t R = {anchor}.size({dim});",
                 f"    const int64_t inner = {size_product(anchor, range(dim + 1, rank))};",
                 "    const int64_t rows = n / R;"]
    launch_args = ", ".join([f"out.data_ptr<{out_type}>()"] + [f"c{k}.data_ptr<float>()" for k in range(len(inputs))]
                            + ["rows", "R", "inner", f"{anchor}.size(0)" if needs_batch else "1"])
    blocks = grid_for("rows", params.block_size) if per_thread else "(int)std::min<int64_t>(rows, 65535)"
    host = [f"torch::Tensor {name}({', '.join(f'torch::Tensor x{k}' for k in range(len(inputs)))}) {{",
            *(f"    auto c{k} = x{k}.contiguous();" for k in range(len(inputs))),
            f"    const int64_t n = {anchor}.numel();",
            f"    auto out = torch::empty({out_shape(out, cls[id(out)] == 'full', anchor, dim, rank)}, "
            f"{anchor}.options(){'.dtype(torch::kLong)' if out.integer else ''});",
            "    if (n == 0) return out;", *sizes,
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


def input_class(v: Val, shape: tuple[int, ...], keep: tuple[int, ...], dim: int | None) -> str:
    padded = (1,) * (len(shape) - len(v.shape)) + v.shape
    if padded == shape:
        return "full"
    if all(s == 1 for s in padded):
        return "uniform"
    if padded == keep and v.shape == keep:
        return "row"
    if dim is not None and all(s == 1 or k == dim for k, s in enumerate(padded)):
        return "col"
    raise Untranslatable(f"operand of shape {v.shape} in a reduction over dim {dim} of {shape}")


def member_class(m: Val, cls: dict[int, str], shape: tuple[int, ...], keep: tuple[int, ...]) -> str:
    if m.op == "reduce":
        if cls[id(m.args[0])] != "full":
            raise Untranslatable("a reduction of a broadcast operand")
        return "row"
    kinds = {cls[id(a)] for a in m.operands()}
    if kinds & {"full", "col"}:
        if m.shape != shape or any(cls[id(a)] == "row" and a.shape != keep for a in m.operands()):
            raise Untranslatable(f"a per-row value of shape {m.shape} broadcast against {shape}")
        return "full"
    return "row" if "row" in kinds else "uniform"


def closure(target: Val, members: list[Val], cls: dict[int, str]) -> set[int]:
    """Ids of the per-element values `target` depends on: full members (recomputed inside a row loop)
    and the full/col inputs they read."""
    member_ids = {id(m) for m in members}
    need: set[int] = set()
    stack = [target]
    while stack:
        v = stack.pop()
        if id(v) not in need and cls[id(v)] in ("full", "col"):
            need.add(id(v))
            if id(v) in member_ids:
                stack.extend(v.operands())
    return need


def out_shape(out: Val, full: bool, anchor: str, dim: int | None, rank: int) -> str:
    if full:
        return f"{anchor}.sizes()"
    if dim is None:  # a full reduction: () or, with keepdim, all ones
        return f"std::vector<int64_t>({len(out.shape)}, 1)"
    kept = len(out.shape) == rank
    sizes = ["1" if k == dim else f"{anchor}.size({k})" for k in range(rank) if kept or k != dim]
    return "std::vector<int64_t>{" + ", ".join(sizes) + "}"
