"""Scores candidates for GRPO: a syntax gate (an answer that is not Python is a compile error, no sandbox
needed), the executor for the rest, the reward rule on the verdict, and every candidate handed to a recorder
(the archive) with its parent. Counts evaluations and their wall time for throughput reports."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hipforge import pyast
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate_many
from hipforge.execution.pool.base import EvalPool
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.train.reward import RewardRule

# (task_id, candidate source, verdict, parent kernel id or None, training step) -> kernel id
Recorder = Callable[[str, str, EvalResult, "str | None", int], str]


@dataclass(frozen=True)
class Job:
    task_id: str
    source: str  # the candidate, as the policy wrote it
    eval_source: str  # the task at the size the backend runs
    parent: str | None = None  # the attempt this one retries


@dataclass(frozen=True)
class Scored:
    result: EvalResult
    reward: float
    kernel_id: str


def syntax_verdict(source: str) -> EvalResult | None:
    """A compile error for an answer that does not parse as Python; None when it parses."""
    try:
        pyast.parse(source)
    except (SyntaxError, ValueError) as err:
        where = f" (line {err.lineno})" if isinstance(err, SyntaxError) and err.lineno else ""
        return EvalResult(Verdict.COMPILE_ERROR, f"the answer is not a Python file{where}: {err}", phase="static")
    return None


class CandidateScorer:
    def __init__(self, config: EvalConfig, rule: RewardRule, parallel: int = 2,
                 recorder: Recorder | None = None, pool: EvalPool | None = None) -> None:
        """``pool``: an evaluation pool (local workers per GPU, or Ray) instead of in-process evaluate_many."""
        self.config, self.rule, self.parallel, self.recorder, self.pool = config, rule, parallel, recorder, pool
        self.evaluations = 0  # every scored candidate
        self.executor_evaluations = 0  # those that reached the sandbox
        self.seconds = 0.0

    def __call__(self, jobs: Sequence[Job], step: int = 0) -> list[Scored]:
        started = time.monotonic()
        results: list[EvalResult | None] = [syntax_verdict(job.source) for job in jobs]
        for result in results:
            if result is not None:  # the verdict is the backend's as much as a sandboxed one would be
                result.backend, result.arch = self.config.backend, self.config.arch
        pending = [i for i, r in enumerate(results) if r is None]
        items = [(jobs[i].source, jobs[i].eval_source) for i in pending]
        done = self.pool.evaluate_many(items) if self.pool else evaluate_many(items, self.config, self.parallel)
        for index, result in done:
            results[pending[index]] = result
        self.evaluations += len(jobs)
        self.executor_evaluations += len(pending)
        self.seconds += time.monotonic() - started
        scored = []
        for job, result in zip(jobs, results, strict=True):
            assert result is not None  # every pending index was filled by evaluate_many
            kid = self.recorder(job.task_id, job.source, result, job.parent, step) if self.recorder \
                else kernel_id(job.source)
            scored.append(Scored(result, self.rule(result), kid))
        return scored
