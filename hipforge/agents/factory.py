"""Agent choice is configuration: per agent "offline" or "gemini" / "gemini:<model>", mixed freely."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Evolver, Translator
from hipforge.agents.evolver.llm import LLMEvolver
from hipforge.agents.evolver.offline import OfflineEvolver
from hipforge.agents.judge.llm import LLMPlausibilityJudge
from hipforge.agents.judge.offline import OfflinePlausibilityFilter, PlausibilityJudge
from hipforge.agents.summarizer.llm import LLMSummarizer
from hipforge.agents.summarizer.offline import OfflineSummarizer
from hipforge.agents.translator.llm import LLMTranslator
from hipforge.agents.translator.offline import OfflineTranslator
from hipforge.llm import CallLog, LLMClient, LLMConfigError, ResponseCache, RetryPolicy, make_provider

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


@dataclass
class Agents:
    translator: Translator
    evolver: Evolver
    judge: PlausibilityJudge
    summarizer: OfflineSummarizer | LLMSummarizer


def build_agents(config: Mapping[str, str], *, archive: KernelArchive | None = None, cache: ResponseCache | None = None,
                 log: CallLog | None = None, base_url: str | Endpoint | None = None, lessons: str = "", budget: int = 8,
                 children: int = 4, seed: int = 0, threshold: float = 0.5, attempts: int = 5) -> Agents:
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
        translator=(LLMTranslator(client("translator"), attempts, lessons, judge=judge)
                    if "translator" in gemini else OfflineTranslator()),
        evolver=(LLMEvolver(client("evolver"), archive, judge, budget=budget, seed=seed) if "evolver" in gemini
                 else OfflineEvolver(budget, children, seed)),
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
