"""Agent choice is configuration: per agent "offline" or "gemini" / "gemini:<model>", mixed freely."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import AgentTask, Candidate, Declined, Translator
from hipforge.agents.evolve import Evolution, evolve
from hipforge.agents.llm.evolver import LLMEvolver
from hipforge.agents.llm.judge import LLMPlausibilityJudge
from hipforge.agents.llm.summarizer import LLMSummarizer, OfflineSummarizer
from hipforge.agents.llm.translator import EvaluateFn, LLMTranslator
from hipforge.agents.offline_translator import OfflineTranslator
from hipforge.agents.plausibility import OfflinePlausibilityFilter, PlausibilityJudge
from hipforge.execution.verdict import EvalResult
from hipforge.llm import CallLog, LLMClient, LLMConfigError, ResponseCache, RetryPolicy, make_provider
from hipforge.translate import GenParams

AGENTS = ("translator", "evolver", "judge", "summarizer")
DEFAULT_MODEL = "gemini-2.5-flash"  # what the seed used for every agent


@dataclass(frozen=True)
class Endpoint:
    """How Gemini agents reach the API: another base URL (a proxy, a local stand-in), timeouts, retries, rate."""

    base_url: str | None = None
    timeout_s: float = 600.0
    retry: RetryPolicy = RetryPolicy()
    rpm: float | None = None


@dataclass(frozen=True)
class AgentChoice:
    kind: str  # offline | gemini
    model: str | None = None

    @classmethod
    def parse(cls, text: str) -> AgentChoice:
        kind, _, model = text.strip().partition(":")
        if kind == "offline" and not model:
            return cls("offline")
        if kind == "gemini":
            return cls("gemini", model or DEFAULT_MODEL)
        raise LLMConfigError(f"agent choice {text!r}: use 'offline', 'gemini' or 'gemini:<model>'")


class OfflineEvolver:
    """The parametric optimizer behind the LLM evolver's call shape. It ignores `start`: the offline
    translator is deterministic, so evolution restarts from its default parameters."""

    name = "offline-evolver"

    def __init__(self, evaluate_fn: EvaluateFn, budget: int = 8, children: int = 4, seed: int = 0) -> None:
        self.evaluate_fn, self.budget, self.children, self.seed = evaluate_fn, budget, children, seed

    def evolve(self, task: AgentTask, start: list[tuple[Candidate, EvalResult]]) -> Evolution:
        def make(t: AgentTask, params: GenParams) -> Candidate | Declined:
            return OfflineTranslator(params=params).translate(t, [])

        return evolve(task, make, lambda c: self.evaluate_fn(c.source, task), budget=self.budget,
                      children=self.children, seed=self.seed)


@dataclass
class Agents:
    translator: Translator
    evolver: OfflineEvolver | LLMEvolver
    judge: PlausibilityJudge
    summarizer: OfflineSummarizer | LLMSummarizer


def build_agents(config: Mapping[str, str], evaluate_fn: EvaluateFn, *, archive: KernelArchive | None = None,
                 cache: ResponseCache | None = None, log: CallLog | None = None, base_url: str | Endpoint | None = None,
                 lessons: str = "", budget: int = 8, threshold: float = 0.5, attempts: int = 5) -> Agents:
    """Agents named in `config` (missing ones are offline). Gemini agents share the cache; each one's
    calls are logged under its own name. The judge screens what the LLM translator and evolver write
    before it is evaluated (the offline translator's output is compiled from templates, so it is not screened)."""
    unknown = set(config) - set(AGENTS)
    if unknown:
        raise LLMConfigError(f"unknown agents {sorted(unknown)}: configure {', '.join(AGENTS)}")
    choice = {name: AgentChoice.parse(config.get(name, "offline")) for name in AGENTS}

    def client(name: str) -> LLMClient:
        return gemini_client(choice[name], name, cache, log, base_url)

    gemini = {name for name in AGENTS if choice[name].kind == "gemini"}
    judge = make_judge(config.get("judge", "offline"), threshold, cache, log, base_url)
    return Agents(
        translator=(LLMTranslator(client("translator"), evaluate_fn, attempts, lessons, judge=judge)
                    if "translator" in gemini else OfflineTranslator()),
        evolver=(LLMEvolver(client("evolver"), evaluate_fn, archive, judge, budget=budget) if "evolver" in gemini
                 else OfflineEvolver(evaluate_fn, budget=budget)),
        judge=judge,
        summarizer=LLMSummarizer(client("summarizer")) if "summarizer" in gemini else OfflineSummarizer(),
    )


def gemini_client(choice: AgentChoice, agent: str, cache: ResponseCache | None, log: CallLog | None,
                  base_url: str | Endpoint | None) -> LLMClient:
    """`base_url` is an Endpoint, or a bare URL with default timeouts and retries."""
    end = base_url if isinstance(base_url, Endpoint) else Endpoint(base_url)
    provider = make_provider("gemini", choice.model or DEFAULT_MODEL, base_url=end.base_url, rpm=end.rpm,
                             timeout_s=end.timeout_s, retry=end.retry)
    return LLMClient(provider, cache, log.for_agent(agent) if log else None)


def make_judge(choice: str, threshold: float = 0.5, cache: ResponseCache | None = None, log: CallLog | None = None,
               base_url: str | Endpoint | None = None, agent: str = "judge") -> PlausibilityJudge:
    """The plausibility judge alone (the auditor needs only this one)."""
    parsed = AgentChoice.parse(choice)
    if parsed.kind == "offline":
        return OfflinePlausibilityFilter(threshold)
    return LLMPlausibilityJudge(gemini_client(parsed, agent, cache, log, base_url), threshold)
