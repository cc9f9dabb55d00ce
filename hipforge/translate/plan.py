"""Partition the IR into fused kernels and ATen calls, and write ModelNew's forward over them.

Connected elementwise/reduction values are fused into as few kernels as can each be one launch (see
fuse); the heavy ops between them (conv,
linear, matmul) stay in ATen, the strategy the seed's SFT model learned. A model that is one
matmul/bmm/linear gets the tiled GEMM instead, convolutions direct N-d kernels; scans and pooling
are kernels of their own wherever they appear. With GenParams.conv_epilogue "fused", a conv whose output
only elementwise work reads is our conv kernel with that work applied before its store (conv_epilogue.py);
gemm_epilogue "fused" does the same for a GEMM with our GEMM kernel (gemm_epilogue.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val, broadcast, outside_inputs, topo
from hipforge.translate.kernels.common import Kernel
from hipforge.translate.kernels.conv import conv_chain
from hipforge.translate.kernels.conv_epilogue import conv_epilogue_kernel, placements
from hipforge.translate.kernels.elementwise import broadcast_span, elementwise_kernel
from hipforge.translate.kernels.gemm import gemm_kernel
from hipforge.translate.kernels.gemm_epilogue import GEMM_KINDS, gemm_epilogue_kernel
from hipforge.translate.kernels.gemm_epilogue import placements as gemm_placements
from hipforge.translate.kernels.two_stage_reduce import CUT_ROWS, reduction_kernel, splits
from hipforge.translate.kernels.value_classes import classify
from hipforge.translate.lower.ops import as_shape, binary
from hipforge.translate.params import GenParams


@dataclass(frozen=True)
class Program:
    kernels: tuple[Kernel, ...]
    forward: tuple[str, ...]  # body lines of ModelNew.forward
    strategy: str  # elementwise | reduction | gemm | conv | conv_epilogue | scan | fused-around-aten (+ joins own)
    uses_functional: bool  # ModelNew calls torch.nn.functional
    choices: dict[str, Any] = field(default_factory=dict)  # what a requested choice became (conv_epilogue), and why


def plan(output: Val, params: GenParams) -> Program:
    order = topo(output)
    if _bias_into_epilogue(order):
        order = topo(output)
    groups = fuse(order, output)
    if not groups and not any(v.op == "kernel" for v in order):
        return _single_op_program(output, params)
    users = _users(order)
    taken, choices = placements(order, groups, output, users, params)
    choices |= gemm_placements(order, groups, output, users, params, taken)
    kernel_at: dict[int, Kernel] = {}
    for k, members in enumerate(groups):
        if (heavy := taken.get(id(members[-1]))) is not None:  # the heavy op's kernel computes the group: one launch
            gemm = heavy.kind in GEMM_KINDS
            build_heavy = gemm_epilogue_kernel if gemm else conv_epilogue_kernel
            kernel_at[id(members[-1])] = build_heavy(f"{'gemm' if gemm else 'conv'}_epilogue_{k}", heavy, members,
                                                     params)
            continue
        build = reduction_kernel if any(m.op == "reduce" for m in members) else elementwise_kernel
        kernel_at[id(members[-1])] = build(f"fused_{k}", members, outside_inputs(members), members[-1], params)
    absorbed = {id(heavy) for heavy in taken.values()}
    for k, v in enumerate(x for x in order if x.op == "kernel"):
        kernel_at[id(v)] = v.extra["build"](f"{v.fn}_{k}", v, params)
    lines, expr = [], {}
    for v in order:
        if v.op == "input":
            expr[id(v)] = v.ref
        elif (v.op == "aten" and id(v) not in absorbed) or id(v) in kernel_at:
            expr[id(v)] = f"t{len(lines)}"
            call = (v.fn.format(*(expr[id(a)] for a in v.args)) if v.op == "aten" else
                    f"hip_ext.{kernel_at[id(v)].name}({', '.join(expr[id(a)] for a in kernel_at[id(v)].inputs)})")
            lines.append(f"{expr[id(v)]} = {call}")
    lines.append(f"return {expr[id(output)]}")
    aten = any(v.op == "aten" and v.kind != "view" and id(v) not in absorbed for v in order)  # views are free
    own = sorted({v.extra["build"].__name__.removesuffix("_kernel") for v in order if v.op == "kernel"} |
                 {f"{'gemm' if v.kind in GEMM_KINDS else 'conv'}_epilogue" for v in taken.values()})
    strategy = "fused-around-aten" if aten else "+".join(own) if own else (
        "reduction" if any(v.op == "reduce" for v in order) else "elementwise")
    uses_functional = any(v.op == "aten" and v.fn.startswith("F.") and id(v) not in absorbed for v in order)
    return Program(tuple(kernel_at.values()), tuple(lines), strategy, uses_functional, choices)


def _bias_into_epilogue(order: list[Val]) -> bool:
    """Convolutions whose every user is fused HIP work leave their bias to that kernel, where it is free:
    PyTorch adds a conv's bias in a pass of its own for many cuDNN algorithms (3-d, transposed), a
    whole extra read and write of the conv's output. Rewrites in place; whether anything changed."""
    users = _users(order)
    changed = False
    for v in order:
        if v.kind != "conv" or len(v.args) != 3 or v.args[2].op != "input" or len(v.shape) < 2 \
                or not users.get(id(v)) or not all(u.fusible for u in users[id(v)]):
            continue
        conv = Val("aten", v.shape, v.args[:2], fn=v.fn.replace("{2}", "None"), kind="conv", extra=dict(v.extra))
        channel = (v.shape[1],) + (1,) * (len(v.shape) - 2)
        vars(v).update(vars(binary("add", conv, as_shape(v.args[2], channel))))  # users keep pointing at v
        changed = True
    return changed


def fuse(order: list[Val], output: Val) -> list[list[Val]]:
    """The fusible values cut into kernels, each group in topological order with its result last.

    Greedy in topological order: a value joins its operands' groups when the merged group is still
    one kernel (a single reduction domain, operands indexable); a value that a group computes but
    another kernel also needs ends its group (it becomes a kernel output), found by fixed point.
    """
    ends: set[int] = set()
    users = _users(order)
    while True:
        groups = _greedy(order, ends)
        extra = set()
        for members in groups:
            inside = {id(m) for m in members}
            used_inside = {id(a): 0 for a in members}
            for m in members:
                for a in m.operands():
                    if id(a) in inside:
                        used_inside[id(a)] += 1
            extra |= {id(m) for m in members[:-1] if m is output or len(users.get(id(m), [])) > used_inside[id(m)]}
        if not extra - ends:
            return groups
        ends |= extra


def _users(order: list[Val]) -> dict[int, list[Val]]:
    """id of a value -> the values that take it as an operand (once per use)."""
    users: dict[int, list[Val]] = {}
    for v in order:
        for a in v.operands():
            users.setdefault(id(a), []).append(v)
    return users


def _greedy(order: list[Val], ends: set[int]) -> list[list[Val]]:
    position = {id(v): k for k, v in enumerate(order)}
    group_of: dict[int, int] = {}
    groups: dict[int, list[Val]] = {}
    closed: set[int] = set()
    for v in order:
        if not v.fusible:
            continue
        near = list(dict.fromkeys(group_of[id(a)] for a in v.operands()
                                  if id(a) in group_of and group_of[id(a)] not in closed))
        options = [near] + ([[g] for g in near] if len(near) > 1 else [])
        target = None
        for option in options:
            members = sorted([m for g in option for m in groups[g]] + [v], key=lambda m: position[id(m)])
            if option and _one_kernel(members):
                target = option[0]
                for g in option[1:]:
                    for m in groups.pop(g):
                        group_of[id(m)] = target
                groups[target] = members
                break
        if target is None:
            target = len(position) + len(groups) + position[id(v)]
            groups[target] = [v]
        group_of[id(v)] = target
        if id(v) in ends:
            closed.add(target)
    return sorted(groups.values(), key=lambda ms: position[id(ms[-1])])


def _one_kernel(members: list[Val]) -> bool:
    """Whether `members`, with its last value as the result, can be emitted as one fused kernel."""
    inputs = outside_inputs(members)
    for k, m in enumerate(members):  # x / x.norm(): one block would reduce it all
        rows = math.prod(m.shape)
        if m.op == "reduce" and splits(m, CUT_ROWS) and any(math.prod(u.shape) > rows for u in members[k + 1:]):
            return False  # very few long rows: the two-stage reduction; per-element work after it in its own kernel
    try:
        if any(m.op == "reduce" for m in members):
            classify(members, inputs, members[-1])
        else:
            out = members[-1].shape
            if not any((1,) * (len(out) - len(v.shape)) + v.shape == out for v in inputs):
                return False
            for v in inputs:
                broadcast_span(v.shape, out)
            if any(m.shape != out and (1,) * (len(out) - len(m.shape)) + m.shape != out and
                   broadcast(m.shape, out) != out for m in members):
                return False
    except Untranslatable:
        return False
    return True


def _single_op_program(output: Val, params: GenParams) -> Program:
    """A model without elementwise work: one GEMM, or convolutions, get kernels of their own."""
    heavy = [v for v in topo(output) if v.op == "aten" and v.kind != "view"]
    if heavy and all(v.kind == "conv" for v in heavy):
        kernels, lines = conv_chain(topo(output), output, params)
        return Program(kernels, lines, "conv", False)
    if len(heavy) != 1 or heavy[0] is not output or output.kind not in GEMM_KINDS:
        ops = ", ".join(sorted({v.fn.split("(")[0] for v in heavy})) or "none"
        raise Untranslatable(f"unsupported op: {ops} with nothing around it to fuse")
    kernel, strategy = gemm_kernel("gemm", output, params), "gemm"
    call = f"hip_ext.{kernel.name}({', '.join(v.ref for v in kernel.inputs)})"
    return Program((kernel,), (f"return {call}",), strategy, False)
