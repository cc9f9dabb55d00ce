"""OfflineTranslator: the translator agent without an LLM, a deterministic compiler (hipforge.translate)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hipforge.agents.base import AgentTask, Candidate, Declined, Verifier
from hipforge.translate import GenParams, Untranslatable, generate


@dataclass(frozen=True)
class OfflineTranslator:
    name: str = "offline-translator"
    params: GenParams = field(default_factory=GenParams)
    side_by_side: bool = False  # compiling is quick: its candidates are evaluated together afterwards

    def with_params(self, **changes: Any) -> OfflineTranslator:
        """The same translator with other code-generation choices (what an optimizer mutates)."""
        return replace(self, params=self.params.with_changes(**changes))

    def translate(self, task: AgentTask, verifier: Verifier | None = None) -> Candidate | Declined:
        """The compiled candidate, left for the runner to evaluate (no verifier needed), or why not."""
        try:
            generated = generate(task.source, self.params)
        except Untranslatable as exc:
            return Declined(self.name, str(exc))
        return Candidate(generated.source, self.name,
                         params={**self.params.to_dict(), **generated.choices, "strategy": generated.strategy,
                                 "kernels": list(generated.kernels), "rewrites": list(generated.rewrites)})
