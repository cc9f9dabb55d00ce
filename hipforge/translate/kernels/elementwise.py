"""One fused elementwise kernel: a grid-stride loop, float4 on the aligned body, a scalar tail."""

from __future__ import annotations

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val
from hipforge.translate.kernels.common import Kernel, emit_ew, grid_for, size_product
from hipforge.translate.params import GenParams

LANES = ("x", "y", "z", "w")


def broadcast_span(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, int] | None:
    """(a, b) such that an operand of `shape` varies exactly over dims [a, b) of `out`; None: a scalar."""
    padded = (1,) * (len(out) - len(shape)) + shape
    varying = [k for k, size in enumerate(padded) if size != 1]
    if not varying:
        return None
    a, b = varying[0], varying[-1] + 1
    if any(padded[k] != out[k] for k in range(a, b)):
        raise Untranslatable(f"broadcast of {shape} to {out} is not one contiguous run of dims")
    return a, b


def _tag(span: tuple[int, int]) -> str:
    return f"_{span[0]}_{span[1]}"


def span_load(k: int, span: tuple[int, int] | None, index: str) -> str:
    """Operand k at flat output index `index`, for an operand broadcast over all dims but `span`."""
    return f"in{k}[hf_bcast({index}, inner{_tag(span)}, count{_tag(span)})]" if span else f"in{k}[0]"


def span_params(spans: list[tuple[int, int] | None]) -> tuple[list[str], list[str]]:
    """(kernel parameters, launch arguments) of the (inner, count) pair of each distinct broadcast span."""
    tags = sorted({_tag(s) for s in spans if s})
    return [f"int64_t inner{t}, int64_t count{t}" for t in tags], [f"inner{t}, count{t}" for t in tags]


def span_host(spans: list[tuple[int, int] | None], anchor: str, rank: int) -> list[str]:
    """Host lines computing each (inner, count) pair from the full-shaped tensor `anchor` at run time."""
    lines = []
    for t in sorted({_tag(s) for s in spans if s}):
        a, b = (int(x) for x in t.strip("_").split("_"))
        lines.append(f"    const int64_t inner{t} = {size_product(anchor, range(b, rank))};")
        lines.append(f"    const int64_t count{t} = {size_product(anchor, range(a, b))};")
    return lines


def ew_function(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> list[str]:
    """`{name}_op(x0, x1, ...)`: the group's expression over one element of each input, in `inputs`' order
    (the elementwise kernel's body, and a convolution's epilogue)."""
    if any("row_index" in m.extra for m in members):
        raise Untranslatable("an index along a reduced dim outside its reduction")
    names: dict[int, str] = {id(v): f"x{k}" for k, v in enumerate(inputs)}
    body = [emit_ew(m, names, params) for m in members]
    return [f"__device__ __forceinline__ float {name}_op({', '.join(f'float x{k}' for k in range(len(inputs)))}) {{",
            *(f"    {line}" for line in body), f"    return {names[id(out)]};", "}"]


def elementwise_kernel(name: str, members: list[Val], inputs: list[Val], out: Val, params: GenParams) -> Kernel:
    shape, rank = out.shape, len(out.shape)
    op = ew_function(name, members, inputs, out, params)  # its decline (a reduced-dim index) first, as before
    spans = [broadcast_span(v.shape, shape) for v in inputs]
    full = [(1,) * (rank - len(v.shape)) + v.shape == shape for v in inputs]
    anchor = f"c{full.index(True)}" if any(full) else "out"  # else: the operands broadcast against each other

    def load(k: int, index: str) -> str:
        return f"in{k}[{index}]" if full[k] else span_load(k, spans[k], index)

    # one (inner, count) pair per distinct broadcast pattern: bias, running mean, ... of one channel dim share it
    partial = [spans[k] for k in range(len(inputs)) if not full[k]]
    span_c, span_args = span_params(partial)
    params_c = ", ".join(["float* __restrict__ out"] + [f"const float* __restrict__ in{k}" for k in range(len(inputs))]
                         + ["int64_t n"] + span_c + ["int vec"])
    kernel = [f"__global__ void {name}_kernel({params_c}) {{",
              "    const int64_t stride = (int64_t)gridDim.x * blockDim.x;",
              "    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;",
              "    const int64_t nvec = vec ? n / 4 : 0;"]
    if params.vector_width == 4:
        tags = sorted({_tag(s) for s in partial if s})
        kernel += ["    for (int64_t v = tid; v < nvec; v += stride) {",
                   *(f"        const float4 a{k} = reinterpret_cast<const float4*>(in{k})[v];"
                     for k in range(len(inputs)) if full[k]),
                   *(f"        int64_t j{t}[4];\n        hf_bcast4(v * 4, inner{t}, count{t}, j{t});" for t in tags),
                   "        float4 r;"]

        def lane_operand(k: int, lane: int) -> str:
            if full[k]:
                return f"a{k}.{LANES[lane]}"
            return f"in{k}[j{_tag(spans[k])}[{lane}]]" if spans[k] else f"in{k}[0]"

        for lane, c in enumerate(LANES):
            operands = [lane_operand(k, lane) for k in range(len(inputs))]
            kernel.append(f"        r.{c} = {name}_op({', '.join(operands)});")
        kernel += ["        reinterpret_cast<float4*>(out)[v] = r;", "    }"]
    kernel += ["    for (int64_t i = nvec * 4 + tid; i < n; i += stride)",
               f"        out[i] = {name}_op({', '.join(load(k, 'i') for k in range(len(inputs)))});", "}"]
    host = [f"torch::Tensor {name}({', '.join(f'torch::Tensor x{k}' for k in range(len(inputs)))}) {{",
            *(f"    auto c{k} = x{k}.contiguous();" for k in range(len(inputs))),
            *(_broadcast_shape(len(inputs), rank) if anchor == "out" else []),
            "    auto out = torch::empty(shape, c0.options());" if anchor == "out" else
            f"    auto out = torch::empty({anchor}.sizes(), {anchor}.options());",
            "    const int64_t n = out.numel();",
            "    if (n == 0) return out;"]
    host += span_host(partial, anchor, rank)
    pointers = ["out"] + [f"c{k}" for k in range(len(inputs)) if full[k]]
    aligned = " | ".join(f"reinterpret_cast<std::uintptr_t>({p}.data_ptr<float>())" for p in pointers)
    host.append(f"    const int vec = {'((' + aligned + ') % 16) == 0' if params.vector_width == 4 else '0'};")
    per_block = params.block_size * params.elems_per_thread
    host.append(f"    const int blocks = {grid_for('(vec ? n / 4 : n)', per_block)};")
    launch_args = ", ".join(["out.data_ptr<float>()"] + [f"c{k}.data_ptr<float>()" for k in range(len(inputs))]
                            + ["n"] + span_args + ["vec"])
    host += [f"    {name}_kernel<<<blocks, {params.block_size}>>>({launch_args});", "    return out;", "}"]
    return Kernel(name, "\n".join(op + [""] + kernel + [""] + host) + "\n", tuple(inputs))


def _broadcast_shape(operands: int, rank: int) -> list[str]:
    """Host lines for `shape`, the operands' broadcast shape at run time ((128, 1) + (1, C, 1, 1) -> (1, C, 128, 1))."""
    return [f"    std::vector<int64_t> shape({rank}, 1);",
            f"    for (const auto& c : {{{', '.join(f'c{k}' for k in range(operands))}}})",
            f"        for (int64_t d = 0, at = {rank} - c.dim(); d < c.dim(); ++d)",
            "            if (shape[at + d] == 1) shape[at + d] = c.size(d);"]
