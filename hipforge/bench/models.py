"""How a model under report produces a candidate for a task.

A report's model is named by a key (the Dagster partition):
  offline-agents            the offline translator (deterministic, no LLM)
  gemini | gemini:<model>   the LLM translator on Gemini (GEMINI_API_KEY or a configured base URL)
  baseline                  the untrained base model (a hub id or a local path) through transformers
  checkpoint:<id>           a trained checkpoint from the warehouse's `checkpoints` table, through transformers
LLM models answer through the LLM translator, one attempt by default (KernelBench's one-shot setting).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hipforge.agents.base import Translator
from hipforge.agents.factory import DEFAULT_MODEL
from hipforge.agents.translator.llm import LLMTranslator
from hipforge.agents.translator.offline import OfflineTranslator
from hipforge.llm import (
    CallLog,
    LLMClient,
    LLMConfigError,
    LLMProvider,
    LLMRequest,
    LLMResponse,
    ResponseCache,
    make_provider,
)

if TYPE_CHECKING:  # the GPU script imports this module without duckdb
    from hipforge.store import Warehouse

OFFLINE = "offline-agents"
BASELINE = "baseline"
CHECKPOINT_PREFIX = "checkpoint:"


@dataclass(frozen=True)
class ModelSpec:
    key: str
    kind: str  # offline | gemini | transformers
    model: str = ""  # Gemini model name, or the checkpoint's path / hub id


def checkpoint_key(checkpoint_id: str) -> str:
    return f"{CHECKPOINT_PREFIX}{checkpoint_id}"


def resolve_model(key: str, warehouse: Warehouse | None = None, base_model: str = "",
                  base_url: str | None = None) -> ModelSpec:
    """The model behind a report key; errors say what is missing to use it."""
    if key == OFFLINE:
        return ModelSpec(key, "offline")
    if key == "gemini" or key.startswith("gemini:"):
        if not (os.environ.get("GEMINI_API_KEY") or base_url):
            raise LLMConfigError(f"model {key!r} needs GEMINI_API_KEY in the environment or a configured base URL")
        return ModelSpec(key, "gemini", key.partition(":")[2] or DEFAULT_MODEL)
    if key == BASELINE:
        if not base_model:
            raise LLMConfigError("model 'baseline' needs a base model: a hub id or a local path (HIPFORGE_BASE_MODEL)")
        return ModelSpec(key, "transformers", base_model)
    if key.startswith(CHECKPOINT_PREFIX):
        if warehouse is None:
            raise LLMConfigError(f"model {key!r} is a checkpoint: resolving it needs the warehouse")
        return ModelSpec(key, "transformers", checkpoint_path(warehouse, key.removeprefix(CHECKPOINT_PREFIX)))
    raise LLMConfigError(f"unknown report model {key!r}: use {OFFLINE}, gemini[:<model>], {BASELINE} "
                         f"or {CHECKPOINT_PREFIX}<checkpoint id>")


def checkpoint_path(warehouse: Warehouse, checkpoint_id: str) -> str:
    from hipforge.store import checkpoints  # imported here: the GPU script imports this module without duckdb

    try:
        path = checkpoints.checkpoint_path(warehouse, checkpoint_id)
    except LookupError:
        raise LLMConfigError("the warehouse has no checkpoints table yet: train a model first") from None
    if path is None:
        raise LLMConfigError(f"no checkpoint {checkpoint_id!r} in the warehouse's checkpoints table")
    return path


class TokenCap:
    """An LLM provider that caps how many tokens each answer may take (a tiny CPU model's answers otherwise
    run to the default 8192 tokens). It wraps the client, so the cache key and the call log see the cap."""

    def __init__(self, inner: LLMProvider, max_output_tokens: int) -> None:
        if max_output_tokens < 1:
            raise ValueError(f"max_output_tokens must be at least 1, not {max_output_tokens}")
        self.inner, self.cap = inner, max_output_tokens
        self.name, self.model = inner.name, inner.model

    def _capped(self, request: LLMRequest) -> LLMRequest:
        return dataclasses.replace(request, max_output_tokens=min(request.max_output_tokens, self.cap))

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.inner.complete(self._capped(request))

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return await self.inner.acomplete(self._capped(request))


def make_translator(spec: ModelSpec, *, attempts: int = 1, base_url: str | None = None,
                    cache: ResponseCache | None = None, log: CallLog | None = None,
                    max_output_tokens: int = 8192) -> Translator:
    """The translator a report drives for this model (an LLM one evaluates its attempts through the runner)."""
    if spec.kind == "offline":
        return OfflineTranslator()
    if spec.kind == "gemini":
        provider = make_provider("gemini", spec.model, base_url=base_url)
    else:
        provider = make_provider("transformers", spec.model)
    client = LLMClient(provider, cache, log.for_agent("report") if log else None)
    return LLMTranslator(TokenCap(client, max_output_tokens), max_attempts=attempts)  # type: ignore[arg-type]
