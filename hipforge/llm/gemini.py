"""Gemini through google-genai. The API key is read from the environment at the first call and
handed to the SDK client only: it is never an attribute of ours, logged, cached or put in an error."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from hipforge.llm.base import Completion, RemoteProvider, RetryPolicy, parse_retry_after
from hipforge.llm.cost import Prices
from hipforge.llm.errors import LLMConfigError, TransientLLMError, http_error, redact
from hipforge.llm.request import LLMRequest, LLMResponse

KEY_ENV_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def _api_key() -> str:
    for name in KEY_ENV_VARS:
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    raise LLMConfigError(f"no Gemini API key: set {' or '.join(KEY_ENV_VARS)}")


def _transport_errors() -> tuple[type[BaseException], ...]:
    """google-genai sends through httpx or its fork httpx2, whichever is installed."""
    found: list[type[BaseException]] = []
    for module in ("httpx", "httpx2"):
        try:
            found.append(__import__(module).TransportError)
        except ImportError:
            continue
    return tuple(found)


def _retry_after(err: Any) -> float | None:
    """Retry-After header if any, else the RetryInfo delay ("35s") Gemini puts in a 429 body."""
    headers = getattr(getattr(err, "response", None), "headers", None) or {}
    seconds = parse_retry_after(headers.get("retry-after"))
    if seconds is not None:
        return seconds
    body = err.details if isinstance(err.details, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    for detail in inner.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            return parse_retry_after(str(detail.get("retryDelay", "")).removesuffix("s"))
    return None


def _secrets() -> list[str | None]:
    return [os.environ.get(name) for name in KEY_ENV_VARS]


class GeminiProvider(RemoteProvider):
    name = "gemini"

    def __init__(
        self,
        model: str = "gemini-2.5-flash",
        base_url: str | None = None,
        api_version: str | None = None,
        timeout_s: float = 600.0,
        thinking_budget: int | None = None,
        retry: RetryPolicy | None = None,
        rpm: float | None = None,
        prices: Prices | None = None,
    ) -> None:
        super().__init__(model, retry, rpm, prices)
        self.base_url = base_url
        self.api_version = api_version
        self.timeout_s = timeout_s
        self.thinking_budget = thinking_budget
        self._client: Any = None
        self._lock = threading.Lock()

    def _sdk(self) -> Any:
        with self._lock:
            if self._client is None:
                from google import genai
                from google.genai import types

                options = types.HttpOptions(
                    base_url=self.base_url, api_version=self.api_version, timeout=int(self.timeout_s * 1000)
                )
                # Retries are ours (uniform across providers, Retry-After honoured, attempts recorded).
                self._client = genai.Client(api_key=_api_key(), vertexai=False, http_options=options)
            return self._client

    def _config(self, request: LLMRequest) -> Any:
        from google.genai import types

        system = "\n\n".join(t.content for t in request.turns() if t.role == "system")
        thinking = (
            types.ThinkingConfig(thinking_budget=self.thinking_budget)
            if self.thinking_budget is not None
            else None
        )
        return types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
            seed=request.seed,
            candidate_count=request.n,
            thinking_config=thinking,
        )

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        self._sdk()  # a missing key fails here, before the retry loop counts an attempt
        return await super().acomplete(request)

    async def _send(self, request: LLMRequest) -> Completion:
        from google.genai import errors, types

        client = self._sdk()
        contents = [
            types.Content(
                role="model" if t.role == "assistant" else "user", parts=[types.Part(text=t.content)]
            )
            for t in request.turns()
            if t.role != "system"
        ]
        config = self._config(request)
        try:
            result = await client.aio.models.generate_content(model=self.model, contents=contents, config=config)
        except json.JSONDecodeError as err:  # a truncated or garbled body: proxies and overloaded fronts send them
            raise TransientLLMError(f"{self.name} model {self.model!r}: malformed response body: {err}") from None
        except errors.APIError as err:
            raise http_error(
                self.name,
                self.model,
                err.code,
                f"{err.status or ''} {err.message or ''}".strip(),
                _retry_after(err),
                secrets=_secrets(),
            ) from None
        except _transport_errors() as err:
            message = f"{self.name} model {self.model!r}: {type(err).__name__}: {err}"
            raise TransientLLMError(redact(message, _secrets())) from None
        texts = tuple(
            "".join(
                p.text
                for p in (c.content.parts if c.content and c.content.parts else [])
                if p.text and not p.thought
            )
            for c in result.candidates or []
        )
        usage = result.usage_metadata
        # Gemini bills thinking tokens as output: count them, or costs come out several times too low.
        output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) if usage else None
        return Completion(texts or ("",), usage.prompt_token_count if usage else None, output)
