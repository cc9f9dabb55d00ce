"""OfflineTranslator: the translator agent without an LLM, a deterministic compiler (hipforge.translate)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hipforge.agents.base import AgentTask, Candidate, Declined, Feedback
from hipforge.translate import GenParams, Untranslatable, generate


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
