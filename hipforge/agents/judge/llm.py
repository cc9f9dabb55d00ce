"""The LLM plausibility judge (agent 5): a model scores compile-likelihood and plausibility as JSON.

Answers are parsed leniently (fences, prose around the object, trailing commas, a score as text), but a
score that cannot be read, or lies outside [0, 1], is a clear failure: an unreadable judge must not wave a
candidate through to the GPU.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hipforge.agents.judge.offline import PlausibilityReport
from hipforge.llm import LLMClient, LLMError, LLMRequest

JUDGE_SYSTEM = """You review HIP kernels for AMD MI350X written in KernelBench's HIP format (a Python file whose
ModelNew builds HIP code with torch.utils.cpp_extension.load_inline). Estimate the probability that the
candidate compiles and computes exactly what the reference computes, without shortcuts (calling the
reference or the replaced PyTorch op, caching results, patching timers, lowering precision).
Answer with one JSON object only: {"score": <number from 0 to 1>, "reasons": ["<short reason>", ...]}"""

_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_SCORE = re.compile(r"[\"']?score[\"']?\s*[:=]\s*[\"']?(-?\d+(?:\.\d+)?)", re.I)


def parse_verdict(text: str) -> tuple[float, list[str]] | None:
    """(score, reasons) from a judge's answer, or None when no score in [0, 1] can be read."""
    for obj in _json_objects(text):
        if "score" in obj:
            score, reasons = _number(obj["score"]), obj.get("reasons", [])
            reasons = [str(r) for r in reasons] if isinstance(reasons, list) else [str(reasons)]
            return (score, reasons) if score is not None and 0.0 <= score <= 1.0 else None
    match = _SCORE.search(text)  # a broken object still states its score
    if match and 0.0 <= (score := float(match.group(1))) <= 1.0:
        return score, []
    return None


class LLMPlausibilityJudge:
    def __init__(self, client: LLMClient, threshold: float = 0.5) -> None:
        self.client = client
        self.threshold = threshold
        self.name = f"llm-judge:{client.model}"

    def judge(self, source: str, reference: str | None = None) -> PlausibilityReport:
        prompt = (f"Reference:\n{reference.rstrip()}\n\n" if reference else "") + f"Candidate:\n{source.rstrip()}"
        try:
            # room for a thinking model's reasoning before the JSON
            answer = self.client.complete(LLMRequest(prompt=prompt, system=JUDGE_SYSTEM, max_output_tokens=4096))
        except LLMError as err:
            return PlausibilityReport(0.0, False, [f"judge call failed: {err}"], {"judge_answered": False})
        parsed = parse_verdict(answer.text)
        if parsed is None:
            return PlausibilityReport(0.0, False, [f"judge answer has no score in [0, 1]: {answer.text[:200]!r}"],
                                      {"judge_answered": True, "judge_parsed": False})
        score, reasons = parsed
        return PlausibilityReport(round(score, 4), score >= self.threshold, reasons,
                                  {"judge_answered": True, "judge_parsed": True})


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in the text, in order (fenced or bare), tolerating trailing commas."""
    decoder = json.JSONDecoder()
    cleaned = _TRAILING_COMMA.sub(r"\1", text)
    found: list[dict[str, Any]] = []
    index = cleaned.find("{")
    while index != -1:
        try:
            obj, end = decoder.raw_decode(cleaned, index)
        except json.JSONDecodeError:
            index = cleaned.find("{", index + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        index = cleaned.find("{", end)
    return found


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None
