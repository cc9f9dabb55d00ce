"""A GEMM with the elementwise work after it applied before its store (GenParams.gemm_epilogue "fused").

Today's split keeps a level-2 model's matmul / linear / bmm in ATen (cuBLAS) and fuses the work after it into a
kernel of its own, which reads the product once more and writes it again. Here our GEMM (gemm.py: the simt
tiles, or gemm_mma.py's tensor cores) computes the fused group's expression (elementwise.ew_function) on each
output as it stores it: one launch, no extra pass. Worth it only where our GEMM keeps up with the library's,
so the choice is the GPU timing's; `placements` takes the fused path only where it can prove it, and records
why not, as conv_epilogue.py does for convolutions.
"""

from __future__ import annotations

from hipforge.translate.ir.values import Val, outside_inputs
from hipforge.translate.kernels.common import Kernel
from hipforge.translate.kernels.elementwise import broadcast_span, ew_function, span_host, span_load, span_params
from hipforge.translate.kernels.epilogue_placement import place
from hipforge.translate.kernels.gemm import GemmEpilogue, gemm_kernel
from hipforge.translate.params import GenParams

GEMM_KINDS = ("linear", "matmul", "bmm")


def placements(order: list[Val], groups: list[list[Val]], output: Val, users: dict[int, list[Val]],
               params: GenParams, taken: dict[int, Val]) -> dict[str, str]:
    """Adds to `taken` (id of a fused group's result -> the heavy op whose kernel computes it; a group another
    heavy op already computes stays with it) each GEMM whose output only one fused group of elementwise work
    reads, and returns the choice recorded for the candidate ("gemm_epilogue": "fused" or "aten (why)");
    nothing unless params ask for "fused"."""
    if params.gemm_epilogue != "fused":
        return {}
    gemms = [v for v in order if v.op == "aten" and v.kind in GEMM_KINDS]
    notes = place(gemms, groups, output, users, taken, "GEMM",
                  lambda gemm, members: gemm_epilogue_kernel("check", gemm, members, params))
    return {"gemm_epilogue": "; ".join(dict.fromkeys(notes))} if notes else {}


def gemm_epilogue_kernel(name: str, gemm: Val, members: list[Val], params: GenParams) -> Kernel:
    """One kernel: `gemm` by our GEMM, the group `members` (which reads it) applied before each store."""
    return gemm_kernel(name, gemm, params, epilogue(name, gemm, members, params))


def epilogue(name: str, gemm: Val, members: list[Val], params: GenParams) -> GemmEpilogue:
    """The group's expression at each output as a functor; its other inputs read at the output's flat index
    (GEMM-shaped), its column (varying along the last dim only: a bias), index 0 (scalars), else through their
    broadcast span."""
    inputs, out, rank = outside_inputs(members), gemm.shape, len(gemm.shape)
    op = ew_function(name, members, inputs, members[-1], params)
    others = [k for k, v in enumerate(inputs) if v is not gemm]
    spans = {k: broadcast_span(inputs[k].shape, out) for k in others}
    full = {k for k in others if (1,) * (rank - len(inputs[k].shape)) + inputs[k].shape == out}
    column = {k for k in others if k not in full and spans[k] == (rank - 1, rank)}
    indexed = [spans[k] for k in others if k not in full | column and spans[k] is not None]
    fields, values = span_params(indexed)

    def load(k: int) -> str:
        return f"in{k}[at]" if k in full else f"in{k}[col]" if k in column else span_load(k, spans[k], "at")

    def count(k: int) -> str:  # the elements input k must hold, from the output's sizes at run time
        span = spans[k]
        return "C.numel()" if k in full else "1" if span is None else \
            f"C.size({rank - 1})" if k in column else f"count_{span[0]}_{span[1]}"

    operands = ["v" if v is gemm else load(k) for k, v in enumerate(inputs)]
    functor = [f"struct {name}_epi {{", *(f"    const float* __restrict__ in{k};" for k in others),
               *(f"    {field};" for pair in fields for field in pair.split(", ")),
               "    __device__ __forceinline__ float operator()(float v, int64_t at, int col) const {",
               f"        return {name}_op({', '.join(operands)});", "    }", "};"]
    checks = [f'    TORCH_CHECK({" && ".join(f"E{k}.numel() == {count(k)}" for k in others)}, '
              f'"{name}: an epilogue operand does not broadcast along the GEMM output");'] if others else []
    built = [*(f"E{k}.data_ptr<float>()" for k in others), *(a for pair in values for a in pair.split(", "))]
    return GemmEpilogue(
        device=(*op, *functor), functor=f"{name}_epi", value=f"{name}_epi{{{', '.join(built)}}}",
        host_params="".join(f", torch::Tensor e{k}" for k in others),
        host_lines=(*(f"    auto E{k} = e{k}.contiguous();" for k in others), *span_host(indexed, "C", rank),
                    *checks),
        inputs=tuple(inputs[k] for k in others))
