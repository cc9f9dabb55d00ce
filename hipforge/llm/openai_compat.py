"""A chat-completions server (vLLM, SGLang, TGI, llama.cpp serving our checkpoints) over plain httpx."""

from __future__ import annotations

import os
from typing import Any

from hipforge.llm.base import Completion, RemoteProvider, RetryPolicy, parse_retry_after
from hipforge.llm.cost import Prices
from hipforge.llm.errors import LLMConfigError, LLMRequestError, TransientLLMError, http_error, redact
from hipforge.llm.request import LLMRequest


def _error_message(response: Any) -> str:
    """OpenAI puts the reason in error.message, vLLM in message; fall back to the raw body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        if inner.get("message"):
            return str(inner["message"])
    return str(body)[:500]


class OpenAICompatibleProvider(RemoteProvider):
    """`base_url` ends before /chat/completions (vLLM: http://host:8000/v1). A server that wants a
    key reads it from the environment variable named by api_key_env, at call time."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        rpm: float | None = None,
        prices: Prices | None = None,
    ) -> None:
        # Our own checkpoints on our own GPUs have no per-token price unless one is given.
        super().__init__(model, retry, rpm, prices if prices is not None else {model: (0.0, 0.0)})
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self._tls: Any = None  # one TLS context for all calls: building one costs ~70 ms

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(base_url={self.base_url!r}, model={self.model!r})"

    def _key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise LLMConfigError(
                f"{self.name} model {self.model!r}: environment variable {self.api_key_env} is empty"
            )
        return key

    def _body(self, request: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": t.role, "content": t.content} for t in request.turns()],
            "temperature": request.temperature,
            "max_tokens": request.max_output_tokens,
            "n": request.n,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        return body

    async def _send(self, request: LLMRequest) -> Completion:
        import httpx

        key = self._key()
        if self._tls is None:
            self._tls = httpx.create_ssl_context()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, verify=self._tls) as http:
                response = await http.post(
                    f"{self.base_url}/chat/completions", json=self._body(request), headers=headers
                )
        except httpx.TransportError as err:
            message = f"{self.name} model {self.model!r}: {type(err).__name__}: {err}"
            raise TransientLLMError(redact(message, [key])) from None
        if response.status_code != 200:
            raise http_error(
                self.name,
                self.model,
                response.status_code,
                _error_message(response),
                parse_retry_after(response.headers.get("retry-after")),
                secrets=[key],
            )
        try:
            body = response.json()
            texts = tuple(c["message"].get("content") or "" for c in body["choices"])
        except (ValueError, KeyError, TypeError) as err:
            raise LLMRequestError(
                f"{self.name} model {self.model!r}: malformed chat-completions answer ({err!r})", status=200
            ) from None
        usage = body.get("usage") or {}
        return Completion(texts, usage.get("prompt_tokens"), usage.get("completion_tokens"))
