"""Which model each agent runs on, as a Dagster resource: visible and editable in the launchpad.

Every agent is "offline" by default (the embedded default needs no network). The Gemini API key is read
from GEMINI_API_KEY / GOOGLE_API_KEY by the provider at its first call: it is no field here, so it is
never stored in run config, logged or shown in the UI.
"""

import os
from typing import Literal

import dagster as dg
from pydantic import Field

from hipforge.agents.archive import KernelArchive
from hipforge.agents.factory import AgentChoice, Agents, Endpoint, build_agents, gemini_client
from hipforge.agents.summarizer.llm import LLMSummarizer
from hipforge.agents.summarizer.offline import OfflineSummarizer
from hipforge.llm import CacheMode, CallLog, LLMClient, ResponseCache, RetryPolicy, default_cache_dir
from hipforge.store import Warehouse

CHOICE = "offline | gemini | gemini:<model>"
CACHE_MODES: dict[str, CacheMode] = {"record": "read_write", "replay": "replay", "off": "off"}


class LLMResource(dg.ConfigurableResource):
    """Agent choice per agent (all offline, all Gemini, or mixed), the Gemini endpoint, and the response
    cache: `record` answers from the cache and stores new answers, `replay` fails on any prompt not
    recorded (a reproducible re-run), `off` always asks the model."""

    translator: str = Field(default="offline", description=f"PyTorch -> first HIP kernel: {CHOICE}")
    evolver: str = Field(default="offline", description=f"evolutionary optimizer: {CHOICE}")
    judge: str = Field(default="offline", description=f"plausibility judge before the GPU: {CHOICE}")
    summarizer: str = Field(default="offline", description=f"failure logs -> lessons: {CHOICE}")
    task_generator: str = Field(default="offline", description=f"synthetic task writer: {CHOICE}")
    model: str = Field(default="gemini-2.5-flash", description="the model of agents set to plain 'gemini'")
    base_url: str | None = Field(
        default_factory=lambda: os.environ.get("HIPFORGE_GEMINI_BASE_URL") or None,
        description="another Gemini API endpoint (a proxy, a local stand-in); HIPFORGE_GEMINI_BASE_URL",
    )
    cache: Literal["record", "replay", "off"] = Field(default="record", description="record | replay | off")
    cache_dir: str = Field(default_factory=lambda: str(default_cache_dir()),
                           description="response cache directory; HIPFORGE_LLM_CACHE")
    translator_attempts: int = Field(default=5, description="translator attempts per task, each re-prompted")
    judge_threshold: float = Field(default=0.5, description="the judge's pass score in [0, 1]")
    timeout_s: float = Field(default=600.0, description="per request")
    max_attempts: int = Field(default=5, description="requests per call, retries on 429 / 5xx / timeouts included")
    retry_base_delay_s: float = Field(default=1.0, description="first backoff; doubles per retry, with jitter")
    rpm: float | None = Field(default=None, description="requests per minute per agent (None: unlimited)")

    def choices(self) -> dict[str, str]:
        """The five choices, plain 'gemini' resolved to the configured model; a bad one is a clear error."""
        named = {"translator": self.translator, "evolver": self.evolver, "judge": self.judge,
                 "summarizer": self.summarizer, "task_generator": self.task_generator}
        resolved = {name: f"gemini:{self.model}" if value.strip() == "gemini" else value.strip()
                    for name, value in named.items()}
        for value in resolved.values():
            AgentChoice.parse(value)
        return resolved

    def endpoint(self) -> Endpoint:
        retry = RetryPolicy(max_attempts=self.max_attempts, base_delay=self.retry_base_delay_s)
        return Endpoint(self.base_url, self.timeout_s, retry, self.rpm)

    def response_cache(self) -> ResponseCache:
        return ResponseCache(self.cache_dir, CACHE_MODES[self.cache])

    def call_log(self, warehouse: Warehouse, run_id: str) -> CallLog:
        return CallLog(warehouse, run_id)

    def agents(self, log: CallLog, *, archive: KernelArchive | None = None, lessons: str = "", budget: int = 8,
               children: int = 4, seed: int = 0) -> Agents:
        agents = {k: v for k, v in self.choices().items() if k != "task_generator"}
        return build_agents(agents, archive=archive, cache=self.response_cache(), log=log, base_url=self.endpoint(),
                            lessons=lessons, budget=budget, children=children, seed=seed,
                            threshold=self.judge_threshold, attempts=self.translator_attempts)

    def make_summarizer(self, log: CallLog, max_chars: int = 2000) -> OfflineSummarizer | LLMSummarizer:
        """The summarizer alone: the lessons asset evaluates nothing, so it needs no other agent."""
        choice = AgentChoice.parse(self.choices()["summarizer"])
        if choice.kind == "offline":
            return OfflineSummarizer(max_chars)
        client = gemini_client(choice, "summarizer", self.response_cache(), log, self.endpoint())
        return LLMSummarizer(client, max_chars)

    def task_generator_client(self, log: CallLog) -> LLMClient | None:
        """The synthetic-task writer's client, None when the task generator is offline."""
        choice = AgentChoice.parse(self.choices()["task_generator"])
        if choice.kind == "offline":
            return None
        return gemini_client(choice, "task_generator", self.response_cache(), log, self.endpoint())
