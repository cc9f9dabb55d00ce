"""The LLM translator (agent 2): PyTorch reference -> first working HIP kernel, re-prompted with the
verifier's errors and its earlier attempts until one is correct (the seed needed at most 5 attempts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hipforge.agents.base import AgentTask, Candidate, Declined, Feedback
from hipforge.agents.llm.prompts import TRANSLATOR_SYSTEM, feedback_from, feedback_prompt, task_prompt
from hipforge.agents.plausibility import PlausibilityJudge, PlausibilityReport
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.llm import LLMClient, LLMRequest, Message, extract_code

# (candidate source, task) -> the deterministic gate's verdict; the caller picks the task variant it runs
EvaluateFn = Callable[[str, AgentTask], EvalResult]
NO_CODE = "no_code"  # an answer with no ModelNew in it: re-prompted without spending an evaluation
REJECTED = "rejected"  # the plausibility judge kept it off the GPU: re-prompted with the judge's reasons


@dataclass
class Translation:
    """The loop's outcome: the first correct candidate, else the last one, with every attempt's feedback."""

    candidate: Candidate | None
    result: EvalResult | None
    history: list[Feedback] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        return self.result is not None and self.result.verdict == Verdict.CORRECT


class LLMTranslator:
    def __init__(self, client: LLMClient, evaluate_fn: EvaluateFn, max_attempts: int = 5, lessons: str = "",
                 temperature: float = 0.0, on_attempt: Callable[[Candidate, EvalResult], None] | None = None,
                 judge: PlausibilityJudge | None = None,
                 on_reject: Callable[[Candidate, PlausibilityReport], None] | None = None) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
        self.client = client
        self.evaluate_fn = evaluate_fn
        self.max_attempts = max_attempts
        self.lessons = lessons
        self.temperature = temperature
        self.on_attempt = on_attempt  # e.g. archive every attempt: failures feed the summarizer and RL records
        self.judge = judge  # asked before every evaluation; a rejection costs an attempt, not a GPU run
        self.on_reject = on_reject
        self.name = f"llm-translator:{client.model}"

    def translate(self, task: AgentTask, feedback: list[Feedback]) -> Candidate | Declined:
        """The Translator protocol: the loop's candidate, or a decline when no attempt held code."""
        run = self.run(task, feedback)
        if run.candidate is None:
            return Declined(self.name, f"no candidate reached the verifier in {len(run.history)} answers: "
                                       f"{run.history[-1].message}")
        return run.candidate

    def run(self, task: AgentTask, feedback: list[Feedback] | None = None) -> Translation:
        earlier = list(feedback or [])  # e.g. archive.recent_failures: shown as earlier attempts
        history: list[Feedback] = []
        best: Translation = Translation(None, None, history)
        for attempt in range(1, self.max_attempts + 1):
            answer = self.client.complete(LLMRequest(
                messages=self._conversation(task, [*earlier, *history]), system=TRANSLATOR_SYSTEM,
                temperature=self.temperature, seed=attempt))
            source = extract_code(answer.text, "python")
            if "class ModelNew" not in source:
                # keep the raw answer so the model sees what it sent
                history.append(Feedback(answer.text, NO_CODE,
                                        "the answer holds no Python file defining class ModelNew"))
                continue
            params = {"attempt": attempt, "history": [{"verdict": f.verdict, "message": f.message[:500]}
                                                      for f in history]}
            if self.judge is not None:
                report = self.judge.judge(source, task.source)
                params["plausibility"] = {"judge": self.judge.name, "score": report.score}
                if not report.passed:
                    if self.on_reject:
                        self.on_reject(Candidate(source, self.name, params=params), report)
                    history.append(Feedback(source, REJECTED, f"the plausibility judge ({self.judge.name}) scored "
                                            f"it {report.score}: {'; '.join(report.reasons)}"))
                    continue
            candidate = Candidate(source, self.name, params=params)
            result = self.evaluate_fn(source, task)
            best = Translation(candidate, result, history)
            if self.on_attempt:
                self.on_attempt(best.candidate, result)
            if result.verdict == Verdict.CORRECT:
                return best
            history.append(feedback_from(source, result))
        return best

    def _conversation(self, task: AgentTask, attempts: list[Feedback]) -> list[Message]:
        turns = [Message("user", task_prompt(task.source, self.lessons))]
        for item in attempts:
            turns += [Message("assistant", item.source), Message("user", feedback_prompt(item))]
        return turns
