"""The translator's one entry point: a task's source through the stages, in the order a reader follows them.

frontend (trace the Model on the meta device) -> lower (fx graph to IR) -> simplify (algebra provable for every
input, ir/simplify.py) -> plan (fuse the IR into kernels and ATen calls, each kernel built by its family under
kernels/) -> emit (the KernelBench-format candidate module).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hipforge.translate.emit.candidate import module_source
from hipforge.translate.emit.reference_init import reference_init
from hipforge.translate.errors import Untranslatable
from hipforge.translate.frontend.trace import TracedTask, trace_task
from hipforge.translate.ir.simplify import simplify
from hipforge.translate.lower.fx_graph import lower
from hipforge.translate.params import GenParams
from hipforge.translate.plan import Program, plan


@dataclass(frozen=True)
class Generated:
    source: str
    strategy: str  # elementwise | reduction | gemm | conv | conv_epilogue | scan | fused-around-aten
    kernels: tuple[str, ...]
    rewrites: tuple[str, ...] = ()  # what simplify proved and rewrote, one note each
    choices: dict[str, Any] = field(default_factory=dict)  # params resolved from the task (GenParams' "auto")


def generate(task_source: str, params: GenParams | None = None) -> Generated:
    """Translate a full-size task source; raises Untranslatable naming what is unsupported."""
    params = params or GenParams()
    try:
        program, arg_names, rewrites = _program(trace_task(task_source), params)
    except Untranslatable:  # the model's floats where only a literal will do (a Python branch on one)
        program, arg_names, rewrites = _program(trace_task(task_source, attributes=(int,)), params)
    names = tuple(k.name for k in program.kernels)
    doc = f"Translated by hipforge's offline translator ({program.strategy}); HIP functions: {', '.join(names)}."
    if rewrites:  # the reader of the kernel sees what was proved away
        doc += f" Rewrites proved for every input: {'; '.join(rewrites)}."
    source = module_source(program, arg_names, reference_init(task_source), doc)
    choices = {key: value for k in program.kernels for key, value in k.choices.items()} | program.choices
    return Generated(source, program.strategy, names, rewrites, choices)


def _program(traced: TracedTask, params: GenParams) -> tuple[Program, list[str], tuple[str, ...]]:
    arg_names, output = lower(traced)
    output, rewrites = simplify(output)
    try:
        return plan(output, params), arg_names, rewrites
    except Untranslatable as exc:
        reason = str(exc)
        raise Untranslatable(reason if reason.startswith("unsupported") else f"unsupported fusion: {reason}") from None
