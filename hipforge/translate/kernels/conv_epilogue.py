"""A convolution with the elementwise work after it applied before its store (GenParams.conv_epilogue "fused").

Today's split keeps the conv in ATen and fuses the work after it into a kernel of its own, which reads the
conv's output once more and writes it again. Here our conv kernel (conv.py, conv_gemm.py) computes the
fused group's expression (elementwise.ew_function, the elementwise kernel's own) on each output as it
stores it: one launch. Which is faster depends on the problem (our conv against cuDNN's), so the choice is
the GPU timing's; `placements` takes the fused path only where it can prove it, and records why not.
"""

from __future__ import annotations

from hipforge.translate.ir.values import Val, outside_inputs
from hipforge.translate.kernels.common import Kernel
from hipforge.translate.kernels.conv import Epilogue, conv_kernel
from hipforge.translate.kernels.elementwise import broadcast_span, ew_function, span_host, span_load, span_params
from hipforge.translate.kernels.epilogue_placement import place
from hipforge.translate.params import GenParams

CHANNEL = (1, 2)  # the broadcast span of a per-channel operand, (C, 1, 1) or (1, C, 1, 1): read at the channel


def placements(order: list[Val], groups: list[list[Val]], output: Val, users: dict[int, list[Val]],
               params: GenParams) -> tuple[dict[int, Val], dict[str, str]]:
    """(id of a fused group's result -> the conv its kernel computes, the choice recorded for the candidate);
    nothing unless params ask for "fused".

    A conv is taken in when its output is read by one fused group only, that group has no reduction and
    yields the conv's shape, and every other input broadcasts along the conv's output. Otherwise it stays
    in ATen (today's split) with the reason recorded: "conv_epilogue": "aten (why)".
    """
    if params.conv_epilogue != "fused":
        return {}, {}
    taken: dict[int, Val] = {}
    convs = [v for v in order if v.op == "aten" and v.kind == "conv"]
    notes = place(convs, groups, output, users, taken, "convolution",
                  lambda conv, members: epilogue("check", conv, members, params),
                  lambda conv: None if "conv" in conv.extra else
                  conv.extra.get("conv_unsupported", "no kernel of ours for this convolution"))
    return taken, ({"conv_epilogue": "; ".join(dict.fromkeys(notes))} if notes else {})


def conv_epilogue_kernel(name: str, conv: Val, members: list[Val], params: GenParams) -> Kernel:
    """One kernel: `conv` by our conv kernels, the group `members` (which reads it) applied before each store."""
    return conv_kernel(name, conv, params, epilogue(name, conv, members, params))


def epilogue(name: str, conv: Val, members: list[Val], params: GenParams) -> Epilogue:
    """The group's expression at each conv output; its other inputs read at the output's flat index `at`
    (conv-shaped), its channel (per-channel) or index 0 (scalars), else through their broadcast span."""
    inputs, out, rank = outside_inputs(members), conv.shape, len(conv.shape)
    op = ew_function(name, members, inputs, members[-1], params)
    others = [k for k, v in enumerate(inputs) if v is not conv]
    spans = {k: broadcast_span(inputs[k].shape, out) for k in others}
    full = {k for k in others if (1,) * (rank - len(inputs[k].shape)) + inputs[k].shape == out}
    indexed = [spans[k] for k in others if k not in full and spans[k] not in (None, CHANNEL)]
    kernel_params, launch_args = span_params(indexed)

    def store(at: str, channel: str, value: str) -> str:
        def load(k: int) -> str:
            if k in full:
                return f"in{k}[{at}]"
            return f"in{k}[{channel}]" if spans[k] == CHANNEL else span_load(k, spans[k], at)

        operands = [value if v is conv else load(k) for k, v in enumerate(inputs)]
        return f"y[{at}] = {name}_op({', '.join(operands)});"

    def count(k: int) -> str:  # the elements input k must hold, from the output's sizes at run time
        if k in full:
            return "Y.numel()"
        span = spans[k]
        return "1" if span is None else "OC" if span == CHANNEL else f"count_{span[0]}_{span[1]}"

    checks = [f'    TORCH_CHECK({" && ".join(f"E{k}.numel() == {count(k)}" for k in others)}, '
              f'"{name}: an epilogue operand does not broadcast along the convolution output");'] if others else []
    return Epilogue(
        op=tuple(op),
        kernel_params="".join(f", const float* __restrict__ in{k}" for k in others) +
        "".join(f", {p}" for p in kernel_params),
        store=store,
        host_params="".join(f", torch::Tensor e{k}" for k in others),
        host_inputs=tuple(f"    auto E{k} = e{k}.contiguous();" for k in others),
        host_checks=(*span_host(indexed, "Y", rank), *checks),
        launch_args="".join(f", E{k}.data_ptr<float>()" for k in others) + "".join(f", {a}" for a in launch_args),
        inputs=tuple(inputs[k] for k in others))
