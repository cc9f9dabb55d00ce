"""OfflineTranslator: a deterministic, compiler-style PyTorch -> HIP translator (no LLM)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hipforge.agents.base import AgentTask, Candidate, Declined, Feedback
from hipforge.agents.translate.emit import module_source
from hipforge.agents.translate.graph import TracedTask, Untranslatable, trace_task
from hipforge.agents.translate.lower import lower
from hipforge.agents.translate.params import GenParams
from hipforge.agents.translate.plan import Program, plan
from hipforge.agents.translate.reference_init import reference_init


@dataclass(frozen=True)
class Generated:
    source: str
    strategy: str  # elementwise | reduction | gemm | conv | scan | fused-around-aten
    kernels: tuple[str, ...]


def generate(task_source: str, params: GenParams | None = None) -> Generated:
    """Translate a full-size task source; raises Untranslatable naming what is unsupported."""
    params = params or GenParams()
    try:
        program, arg_names = _program(trace_task(task_source), params)
    except Untranslatable:  # the model's floats where only a literal will do (a Python branch on one)
        program, arg_names = _program(trace_task(task_source, attributes=(int,)), params)
    names = tuple(k.name for k in program.kernels)
    doc = f"Translated by hipforge's offline translator ({program.strategy}); HIP functions: {', '.join(names)}."
    source = module_source(program, arg_names, reference_init(task_source), doc)
    return Generated(source, program.strategy, names)


def _program(traced: TracedTask, params: GenParams) -> tuple[Program, list[str]]:
    arg_names, output = lower(traced)
    try:
        return plan(output, params), arg_names
    except Untranslatable as exc:
        reason = str(exc)
        raise Untranslatable(reason if reason.startswith("unsupported") else f"unsupported fusion: {reason}") from None


@dataclass(frozen=True)
class OfflineTranslator:
    name: str = "offline-translator"
    params: GenParams = field(default_factory=GenParams)

    def with_params(self, **changes: Any) -> OfflineTranslator:
        """The same translator with other code-generation choices (what an optimizer mutates)."""
        return replace(self, params=self.params.with_changes(**changes))

    def translate(self, task: AgentTask, feedback: list[Feedback]) -> Candidate | Declined:
        try:
            generated = generate(task.source, self.params)
        except Untranslatable as exc:
            return Declined(self.name, str(exc))
        # deterministic: the same source again would fail the same way
        for earlier in feedback:
            if earlier.source == generated.source:
                return Declined(self.name, f"this translation was already rejected ({earlier.verdict}): "
                                           f"{earlier.message}")
        return Candidate(generated.source, self.name,
                         params={**self.params.to_dict(), "strategy": generated.strategy,
                                 "kernels": list(generated.kernels)})
