"""What agents exchange: tasks in, candidates out, verdicts back as feedback."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hipforge.agents.judge.offline import PlausibilityReport
    from hipforge.execution.verdict import EvalResult


@dataclass(frozen=True)
class AgentTask:
    """A task as agents see it: the full-size source (kernels are written for it) and its id."""

    task_id: str
    name: str
    source: str


@dataclass(frozen=True)
class Candidate:
    """A HIP candidate in KernelBench format, with where it came from."""

    source: str
    agent: str
    parents: tuple[str, ...] = ()  # kernel ids it was derived from (evolved_from)
    inspirations: tuple[str, ...] = ()  # kernel ids shown to the agent (inspired_by)
    params: dict[str, Any] = field(default_factory=dict)  # code-generation choices, for the record


@dataclass(frozen=True)
class Declined:
    """The agent will not write a kernel for this task, and says why (e.g. the unsupported op)."""

    agent: str
    reason: str


@dataclass(frozen=True)
class Feedback:
    """One earlier attempt and what the verifier said about it."""

    source: str
    verdict: str
    message: str


class Verifier(Protocol):
    """What the stage runner hands an agent for one task. Every candidate the agent has evaluated, or turns
    away before the GPU, goes through it, so the runner records it wherever the stage's results go."""

    def evaluate(self, candidate: Candidate, generation: int = 0) -> EvalResult: ...

    def reject(self, candidate: Candidate, report: PlausibilityReport) -> None:
        """The plausibility judge kept this candidate off the GPU."""

    def skip(self, why: str) -> None:
        """A proposal was not evaluated for another reason (no code in the answer, a near-duplicate)."""

    def decline(self, why: str) -> None:
        """The agent could not make a candidate for the task (an unsupported op, a model out of reach)."""


class Translator(Protocol):
    """PyTorch task -> a first HIP candidate. An agent that verifies its own attempts (the LLM translator,
    re-prompted with the verifier's errors) evaluates them through ``verifier``; the runner evaluates the
    returned candidate if the agent did not."""

    name: str
    side_by_side: bool  # may tasks be translated concurrently

    def translate(self, task: AgentTask, verifier: Verifier) -> Candidate | Declined: ...


class Evolver(Protocol):
    """A task's verified kernel -> faster ones: every child is evaluated through ``verifier``."""

    name: str
    side_by_side: bool  # may tasks evolve concurrently

    def evolve(self, task: AgentTask, start: tuple[Candidate, EvalResult], verifier: Verifier) -> None: ...
