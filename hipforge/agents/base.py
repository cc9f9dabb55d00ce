"""What agents exchange: tasks in, candidates out, verdicts back as feedback."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


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


class Translator(Protocol):
    name: str

    def translate(self, task: AgentTask, feedback: list[Feedback]) -> Candidate | Declined: ...
