"""LLM implementations of the agent interfaces on hipforge.llm.LLMClient (Gemini in production, any
provider in tests), and the factory that picks offline or LLM agents per agent from configuration."""

from hipforge.agents.llm.evolver import LLMEvolution, LLMEvolver, Node
from hipforge.agents.llm.factory import (
    AgentChoice,
    Agents,
    Endpoint,
    build_agents,
    make_judge,
)
from hipforge.agents.llm.judge import LLMPlausibilityJudge, parse_verdict
from hipforge.agents.llm.selection import near_duplicate, pick_parent, selection_weights
from hipforge.agents.llm.summarizer import LLMSummarizer, OfflineSummarizer
from hipforge.agents.llm.translator import LLMTranslator

__all__ = [
    "AgentChoice",
    "Agents",
    "Endpoint",
    "LLMEvolution",
    "LLMEvolver",
    "LLMPlausibilityJudge",
    "LLMSummarizer",
    "LLMTranslator",
    "Node",
    "OfflineSummarizer",
    "build_agents",
    "make_judge",
    "near_duplicate",
    "parse_verdict",
    "pick_parent",
    "selection_weights",
]
