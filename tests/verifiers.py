"""A Verifier for agent tests: verdicts from a script (or a real evaluation), and a record of all it heard."""

from __future__ import annotations

from collections.abc import Callable

from hipforge.agents.base import Candidate
from hipforge.agents.judge.offline import PlausibilityReport
from hipforge.execution.verdict import EvalResult, Verdict

LOG = "module.cpp:12:5: error: use of undeclared identifier 'relu_kernl'"


class ScriptedVerifier:
    """Answers the given verdicts in order (the last one repeats), or asks `judge` for a real verdict."""

    def __init__(self, *sequence: Verdict, judge: Callable[[str], EvalResult] | None = None) -> None:
        self.sequence, self.judge = sequence, judge
        self.given: list[Candidate] = []
        self.generations: list[int] = []
        self.results: list[EvalResult] = []
        self.rejected: list[PlausibilityReport] = []
        self.skipped: list[str] = []
        self.declined: list[str] = []

    def evaluate(self, candidate: Candidate, generation: int = 0) -> EvalResult:
        self.given.append(candidate)
        self.generations.append(generation)
        if self.judge is not None:
            result = self.judge(candidate.source)
        else:
            verdict = self.sequence[min(len(self.given), len(self.sequence)) - 1]
            log = LOG if verdict == Verdict.COMPILE_ERROR else ""
            result = EvalResult(verdict, f"{verdict.value} on attempt {len(self.given)}", compile_log=log,
                                speedup_eager=1.0 if verdict == Verdict.CORRECT else None)
        self.results.append(result)
        return result

    def reject(self, candidate: Candidate, report: PlausibilityReport) -> None:
        self.rejected.append(report)

    def skip(self, why: str) -> None:
        self.skipped.append(why)

    def decline(self, why: str) -> None:
        self.declined.append(why)
