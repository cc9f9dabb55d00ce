"""The LLM summarizer of pipeline failures into lessons text for prompts: it rewrites the offline clusters
(summarizer.offline.summarize) into advice, so the model sees counts and real messages instead of raw logs."""

from __future__ import annotations

from hipforge.agents.summarizer.offline import LESSONS_HEADER, Failures, Lesson, render_lessons, summarize
from hipforge.llm import LLMClient, LLMRequest

SUMMARIZER_SYSTEM = """You turn clusters of failed HIP kernel attempts (AMD MI350X, KernelBench HIP format) into
lessons for the model that writes the next kernels. Write a numbered list, most frequent problem first, one
or two sentences each: what went wrong and exactly what to do instead. Plain text only, no preamble."""


class LLMSummarizer:
    def __init__(self, client: LLMClient, max_chars: int = 2000, max_clusters: int = 12) -> None:
        self.client = client
        self.max_chars = max_chars
        self.max_clusters = max_clusters
        self.name = f"llm-summarizer:{client.model}"

    def lessons(self, failures: Failures) -> str:
        """Lessons text ("" for no failures), cut at max_chars on a line boundary."""
        clusters = summarize(failures)[: self.max_clusters]
        if not clusters:
            return ""
        answer = self.client.complete(LLMRequest(prompt=cluster_prompt(clusters), system=SUMMARIZER_SYSTEM,
                                                 max_output_tokens=2048))
        text = _unfence(answer.text)
        if not text:  # an empty answer is no reason to lose the lessons the clustering found
            return render_lessons(clusters, self.max_chars)
        return _clip(f"{LESSONS_HEADER}\n{text}", self.max_chars)


def cluster_prompt(clusters: list[Lesson]) -> str:
    lines = ["Failure clusters (count, verdict, title, draft advice, example messages):"]
    for i, lesson in enumerate(clusters, 1):
        lines.append(f"{i}. {lesson.count}x {lesson.verdict}: {lesson.title}. Draft advice: {lesson.advice}")
        lines += [f"   example: {example[:300]}" for example in lesson.examples]
    return "\n".join(lines)


def _unfence(text: str) -> str:
    """The answer without a markdown fence around it (models fence plain lists too)."""
    lines = text.strip().splitlines()
    if lines and lines[0].startswith("```"):
        lines = lines[1:-1] if lines[-1].strip() == "```" else lines[1:]
    return "\n".join(lines).strip()


def _clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    return cut[: cut.rfind("\n")] if "\n" in cut else cut
