"""Build a provider from plain configuration values (what a Dagster resource holds)."""

from __future__ import annotations

from typing import Literal

from hipforge.llm.base import RetryPolicy
from hipforge.llm.errors import LLMConfigError
from hipforge.llm.request import LLMProvider

ProviderKind = Literal["gemini", "openai", "transformers"]


def make_provider(
    kind: ProviderKind,
    model: str,
    base_url: str | None = None,
    rpm: float | None = None,
    max_attempts: int = 5,
    timeout_s: float = 600.0,
    api_key_env: str | None = None,
    retry: RetryPolicy | None = None,
) -> LLMProvider:
    """The offline provider is not built here: it wraps a Python function, not a configuration.
    A full `retry` policy overrides max_attempts."""
    retry = retry or RetryPolicy(max_attempts=max_attempts)
    if kind == "gemini":
        from hipforge.llm.gemini import GeminiProvider

        return GeminiProvider(model, base_url=base_url, timeout_s=timeout_s, retry=retry, rpm=rpm)
    if kind == "openai":
        from hipforge.llm.openai_compat import OpenAICompatibleProvider

        if not base_url:
            raise LLMConfigError(f"an openai-compatible provider needs base_url (model {model!r})")
        return OpenAICompatibleProvider(
            base_url, model, api_key_env, timeout_s=timeout_s, retry=retry, rpm=rpm
        )
    if kind == "transformers":
        from hipforge.llm.local import TransformersProvider

        return TransformersProvider(model)
    raise LLMConfigError(f"unknown provider kind {kind!r}: use gemini, openai or transformers")
