"""Partition the IR into fused kernels and ATen calls, and write ModelNew's forward over them.

Connected elementwise/reduction values form one kernel each; the heavy ops between them (conv,
linear, matmul) stay in ATen, the strategy the seed's SFT model learned. A model that is one
matmul/bmm/linear gets the tiled GEMM instead, one conv2d a direct convolution, one cumsum a scan.
"""

from __future__ import annotations

from dataclasses import dataclass

from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_common import Kernel
from hipforge.agents.translate.hip_conv import conv2d_kernel
from hipforge.agents.translate.hip_ew import elementwise_kernel
from hipforge.agents.translate.hip_full import reduction_kernel
from hipforge.agents.translate.hip_gemm import gemm_kernel
from hipforge.agents.translate.hip_scan import cumsum_kernel
from hipforge.agents.translate.ir import Val, topo
from hipforge.agents.translate.params import GenParams

GEMM_KINDS = ("linear", "matmul", "bmm")


@dataclass(frozen=True)
class Program:
    kernels: tuple[Kernel, ...]
    forward: tuple[str, ...]  # body lines of ModelNew.forward
    strategy: str  # elementwise | reduction | gemm | conv | scan | fused-around-aten
    uses_functional: bool  # ModelNew calls torch.nn.functional


def plan(output: Val, params: GenParams) -> Program:
    order = topo(output)
    groups = _groups(order)
    if not groups:
        return _single_op_program(output, params)
    users: dict[int, list[Val]] = {}
    for v in order:
        for a in v.operands():
            users.setdefault(id(a), []).append(v)
    kernel_at: dict[int, Kernel] = {}
    for k, members in enumerate(groups):
        inside = {id(m) for m in members}
        outs = [m for m in members if m is output or any(id(u) not in inside for u in users.get(id(m), []))]
        if len(outs) != 1:
            raise Untranslatable("a fused group whose intermediate values are also needed outside it")
        inputs = list({id(a): a for m in members for a in m.operands() if id(a) not in inside}.values())
        build = reduction_kernel if any(m.op == "reduce" for m in members) else elementwise_kernel
        kernel_at[id(outs[0])] = build(f"fused_{k}", members, inputs, outs[0], params)
    lines, expr = [], {}
    for v in order:
        if v.op == "input":
            expr[id(v)] = v.ref
        elif v.op == "aten" or id(v) in kernel_at:
            expr[id(v)] = f"t{len(lines)}"
            call = (v.fn.format(*(expr[id(a)] for a in v.args)) if v.op == "aten" else
                    f"hip_ext.{kernel_at[id(v)].name}({', '.join(expr[id(a)] for a in kernel_at[id(v)].inputs)})")
            lines.append(f"{expr[id(v)]} = {call}")
    lines.append(f"return {expr[id(output)]}")
    aten = any(v.op == "aten" and v.kind != "view" for v in order)  # views (reshapes) are free
    strategy = "fused-around-aten" if aten else (
        "reduction" if any(v.op == "reduce" for v in order) else "elementwise")
    uses_functional = any(v.op == "aten" and v.fn.startswith("F.") for v in order)
    return Program(tuple(kernel_at.values()), tuple(lines), strategy, uses_functional)


def _groups(order: list[Val]) -> list[list[Val]]:
    """Connected components of the fusible values, each in topological order.

    A reduction is cut from an operand that already went through a reduction of another kind
    (dim or shape): row statistics, then a mean over the rows, are two kernels.
    """
    root = {id(v): id(v) for v in order if v.fusible}
    passes: dict[int, set[tuple]] = {}  # the reductions each fusible value went through

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for v in order:
        if not v.fusible:
            continue
        own = {(v.dim, v.args[0].shape)} if v.op == "reduce" else set()
        passes[id(v)] = set(own)
        for a in v.operands():
            if not a.fusible or (own and passes[id(a)] - own):
                continue
            passes[id(v)] |= passes[id(a)]
            root[find(id(v))] = find(id(a))
    groups: dict[int, list[Val]] = {}
    for v in order:
        if v.fusible:
            groups.setdefault(find(id(v)), []).append(v)
    return list(groups.values())


def _single_op_program(output: Val, params: GenParams) -> Program:
    """A model without elementwise work: one GEMM, conv2d or cumsum gets a kernel of its own."""
    heavy = [v for v in topo(output) if v.op == "aten" and v.kind != "view"]
    if len(heavy) != 1 or heavy[0] is not output or output.kind not in (*GEMM_KINDS, "conv", "cumsum"):
        ops = ", ".join(sorted({v.fn.split("(")[0] for v in heavy})) or "none"
        raise Untranslatable(f"unsupported op: {ops} with nothing around it to fuse")
    if output.kind == "conv":
        kernel, strategy = conv2d_kernel("conv2d", output, params), "conv"
    elif output.kind == "cumsum":
        kernel, strategy = cumsum_kernel("cumsum", output, params), "scan"
    else:
        kernel, strategy = gemm_kernel("gemm", output, params), "gemm"
    call = f"hip_ext.{kernel.name}({', '.join(v.ref for v in kernel.inputs)})"
    return Program((kernel,), (f"return {call}",), strategy, False)
