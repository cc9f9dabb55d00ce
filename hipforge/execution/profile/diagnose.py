"""The evolvers' view of profiling: each correct candidate of a task profiled once, its bottleneck named.

``Diagnoser.for_trial`` fits ``agents.evolver.offline.evolve(diagnose=...)`` (a label steers the mutations),
``Diagnoser.for_node`` fits ``LLMEvolver(diagnose=...)`` (the profile goes into the prompt).
"""

from __future__ import annotations

from typing import Protocol

from hipforge.execution.config import EvalConfig
from hipforge.execution.profile.peaks import Peaks
from hipforge.execution.profile.run import ProfileError, profile_candidate
from hipforge.execution.profile.signals import Profile
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult, Verdict


class _Source(Protocol):
    @property
    def source(self) -> str: ...


class Evaluated(Protocol):
    """A Trial (offline evolver) or a Node (LLM evolver)."""

    @property
    def candidate(self) -> _Source: ...

    @property
    def result(self) -> EvalResult: ...


class Diagnoser:
    def __init__(self, task_source: str, cfg: EvalConfig, peaks: Peaks, tool: str | None = "auto") -> None:
        self.task_source, self.cfg, self.peaks, self.tool = task_source, cfg, peaks, tool
        self.profiles: dict[str, Profile | None] = {}
        self.errors: list[str] = []  # why a candidate could not be profiled; it is then left undiagnosed

    def profile(self, source: str, result: EvalResult) -> Profile | None:
        if result.verdict != Verdict.CORRECT:
            return None
        key = kernel_id(source)
        if key not in self.profiles:
            runtime = result.runtime.median_ms if result.runtime else None
            try:
                self.profiles[key] = profile_candidate(source, self.task_source, self.cfg, self.peaks,
                                                       runtime_ms=runtime, tool=self.tool)
            except (ProfileError, ValueError) as e:
                self.errors.append(f"{key}: {e}")
                self.profiles[key] = None
        return self.profiles[key]

    def for_trial(self, trial: Evaluated) -> str | None:
        found = self.profile(trial.candidate.source, trial.result)
        return found.bottleneck if found else None

    def for_node(self, node: Evaluated) -> Profile | None:
        return self.profile(node.candidate.source, node.result)
