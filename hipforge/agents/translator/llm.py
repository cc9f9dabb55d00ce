"""The LLM translator (agent 2): PyTorch reference -> first working HIP kernel, re-prompted with the
verifier's errors and its earlier attempts until one is correct (the seed needed at most 5 attempts)."""

from __future__ import annotations

from hipforge.agents.base import AgentTask, Candidate, Declined, Feedback, Verifier
from hipforge.agents.judge.offline import PlausibilityJudge
from hipforge.agents.prompts import TRANSLATOR_SYSTEM, feedback_from, feedback_prompt, task_prompt
from hipforge.execution.verdict import Verdict
from hipforge.llm import LLMClient, LLMRequest, LLMRetriesExhausted, Message, extract_code

NO_CODE = "no_code"  # an answer with no ModelNew in it: re-prompted without spending an evaluation
REJECTED = "rejected"  # the plausibility judge kept it off the GPU: re-prompted with the judge's reasons


class LLMTranslator:
    side_by_side = True  # each task's prompts depend only on the task and the lessons

    def __init__(self, client: LLMClient, max_attempts: int = 5, lessons: str = "", temperature: float = 0.0,
                 judge: PlausibilityJudge | None = None) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
        self.client = client
        self.max_attempts = max_attempts
        self.lessons = lessons
        self.temperature = temperature
        self.judge = judge  # asked before every evaluation; a rejection costs an attempt, not a GPU run
        self.name = f"llm-translator:{client.model}"

    def translate(self, task: AgentTask, verifier: Verifier) -> Candidate | Declined:
        """The first attempt the verifier finds correct, else the last one it evaluated; a decline when no
        attempt reached it or the model could not be reached."""
        history: list[Feedback] = []
        last: Candidate | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                answer = self.client.complete(LLMRequest(
                    messages=self._conversation(task, history), system=TRANSLATOR_SYSTEM,
                    temperature=self.temperature, seed=attempt))
            except LLMRetriesExhausted as err:
                return Declined(self.name, f"the model could not be reached: {err}")
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
                    verifier.reject(Candidate(source, self.name, params=params), report)
                    history.append(Feedback(source, REJECTED, f"the plausibility judge ({self.judge.name}) scored "
                                            f"it {report.score}: {'; '.join(report.reasons)}"))
                    continue
            last = Candidate(source, self.name, params=params)
            result = verifier.evaluate(last)
            if result.verdict == Verdict.CORRECT:
                return last
            history.append(feedback_from(source, result))
        if last is None:
            return Declined(self.name, f"no candidate reached the verifier in {len(history)} answers: "
                                       f"{history[-1].message}")
        return last

    def _conversation(self, task: AgentTask, attempts: list[Feedback]) -> list[Message]:
        turns = [Message("user", task_prompt(task.source, self.lessons))]
        for item in attempts:
            turns += [Message("assistant", item.source), Message("user", feedback_prompt(item))]
        return turns
