"""The executor as every stage sees it: evaluate one candidate against its task, or many through a pool. Two
implementations: `LocalExecutor` (one EvalConfig in this process: the CLI and the GPU scripts) and Dagster's
`ExecutorResource` (the configured local or Ray pool, kept warm)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate, evaluate_many
from hipforge.execution.verdict import EvalResult


class Executor(Protocol):
    backend: str

    def evaluate(self, candidate_source: str, task_source: str) -> EvalResult: ...

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]: ...


@dataclass
class LocalExecutor:
    """The executor over one EvalConfig in this process, `parallel` evaluations in flight."""

    config: EvalConfig
    parallel: int = 2

    @property
    def backend(self) -> str:
        return self.config.backend

    def evaluate(self, candidate_source: str, task_source: str) -> EvalResult:
        return evaluate(candidate_source, task_source, self.config)

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        return evaluate_many(items, self.config, self.parallel)
