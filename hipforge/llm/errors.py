"""Errors raised by LLM providers; messages name the provider, model and status, never a secret."""

from __future__ import annotations

from collections.abc import Iterable


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Blank out every secret in text: servers sometimes echo a bad key back in their error body."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


class LLMError(RuntimeError):
    """Base class; `attempts` is how many requests were sent before giving up (0: none)."""

    def __init__(self, message: str, attempts: int = 0) -> None:
        super().__init__(message)
        self.attempts = attempts


class LLMConfigError(LLMError):
    """Misconfiguration detected before any request: missing key, unknown provider kind."""


class LLMRequestError(LLMError):
    """The server refused the request in a way retrying cannot fix (400 bad request, 403 bad key...)."""

    def __init__(self, message: str, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message, attempts)
        self.status = status


class TransientLLMError(LLMError):
    """Worth retrying: 408/429/5xx, timeouts, refused or dropped connections."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class LLMRetriesExhausted(LLMError):
    """Every attempt failed with a transient error; the last one is in the message."""

    def __init__(self, message: str, attempts: int, status: int | None = None) -> None:
        super().__init__(message, attempts)
        self.status = status


class CacheMiss(LLMError):
    """Replay mode found no recorded answer: the run would otherwise call the model."""

    def __init__(self, agent: str, key: str, provider: str, model: str) -> None:
        super().__init__(
            f"replay mode: no cached answer for agent {agent!r} (cache key {key}, {provider}/{model}); "
            "run once with cache mode 'read_write' (the llm resource's 'record') to record it"
        )
        self.agent = agent
        self.key = key


# Timeout, conflict and rate limit; every 5xx is retried too.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def http_error(
    provider: str,
    model: str,
    status: int,
    message: str,
    retry_after: float | None,
    secrets: Iterable[str | None] = (),
) -> LLMError:
    """Classify an HTTP failure: transient ones are retried, the rest surface at once."""
    text = redact(f"{provider} model {model!r}: HTTP {status}: {message}".strip(), secrets)
    if status in RETRYABLE_STATUS or status >= 500:
        return TransientLLMError(text, status=status, retry_after=retry_after)
    return LLMRequestError(text, status=status)
