"""OpenAICompatibleProvider (vLLM-style chat completions) against the fake server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hipforge.llm import (
    CallLog,
    LLMClient,
    LLMConfigError,
    LLMRequest,
    LLMRequestError,
    LLMRetriesExhausted,
    OpenAICompatibleProvider,
    ResponseCache,
    RetryPolicy,
    complete_many,
)
from hipforge.store import Warehouse
from tests.fake_gemini import FakeLLMServer

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, max_retry_after=0.3)
TOKEN = "sk-local-vllm-token-do-not-leak"


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def provider(fake: FakeLLMServer, **kw: object) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(f"{fake.url}/v1/", "hipforge-sft", retry=FAST, timeout_s=10, **kw)  # type: ignore[arg-type]


def test_chat_completion_with_tokens_and_n(fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path) -> None:
    client = LLMClient(provider(fake), ResponseCache(tmp_path / "c"), CallLog(warehouse, "run-7", "evolver"))
    request = LLMRequest(
        prompt="fuse add and relu", system="You write HIP.", n=2, seed=3, max_output_tokens=64
    )
    response = client.complete(request)
    assert response.texts == ("echo: fuse add and relu", "echo: fuse add and relu #1")
    assert (response.input_tokens, response.output_tokens) == (7, 11) and response.cost_usd == 0.0
    [seen] = fake.requests
    assert seen.path == "/v1/chat/completions" and "authorization" not in seen.headers
    assert seen.body == {
        "model": "hipforge-sft",
        "n": 2,
        "seed": 3,
        "temperature": 0.0,
        "max_tokens": 64,
        "messages": [
            {"role": "system", "content": "You write HIP."},
            {"role": "user", "content": "fuse add and relu"},
        ],
    }
    with warehouse.connect(read_only=True) as con:
        provider_name, agent, tokens = con.execute(
            "SELECT provider, agent, output_tokens FROM llm_calls"
        ).fetchone()
    assert (provider_name, agent, tokens) == ("openai", "evolver", 11)


def test_retry_after_then_success(fake: FakeLLMServer) -> None:
    fake.fail_next(429, retry_after="1")
    start = time.perf_counter()
    assert provider(fake).complete(LLMRequest(prompt="p")).attempts == 2
    assert time.perf_counter() - start >= 0.3  # Retry-After (capped at 0.3 s by the policy)


def test_server_errors_exhaust_retries(fake: FakeLLMServer) -> None:
    fake.fail_next(502, count=5, message="bad gateway")
    with pytest.raises(LLMRetriesExhausted, match=r"3 attempts.*'hipforge-sft': HTTP 502: bad gateway"):
        provider(fake).complete(LLMRequest(prompt="p"))
    assert len(fake.requests) == 3


def test_bad_request_is_not_retried(fake: FakeLLMServer) -> None:
    fake.fail_next(400, message="max_tokens is too large")
    with pytest.raises(LLMRequestError, match="HTTP 400: max_tokens is too large"):
        provider(fake).complete(LLMRequest(prompt="p"))
    assert len(fake.requests) == 1


def test_bearer_token_from_env_is_sent_and_never_shown(
    fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIPFORGE_TEST_VLLM_KEY", TOKEN)
    authed = provider(fake, api_key_env="HIPFORGE_TEST_VLLM_KEY")
    authed.complete(LLMRequest(prompt="p"))
    assert fake.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    fake.fail_next(401, message=f"token {TOKEN} rejected")
    with pytest.raises(LLMRequestError) as caught:
        authed.complete(LLMRequest(prompt="p"))
    assert "HTTP 401" in str(caught.value) and TOKEN not in str(caught.value) and TOKEN not in repr(authed)
    monkeypatch.delenv("HIPFORGE_TEST_VLLM_KEY")
    with pytest.raises(LLMConfigError, match="HIPFORGE_TEST_VLLM_KEY"):
        authed.complete(LLMRequest(prompt="p"))


def test_concurrency_and_rate_limit(fake: FakeLLMServer) -> None:
    fake.delay_s = 0.2
    answers = complete_many(provider(fake), [LLMRequest(prompt=str(i)) for i in range(8)], concurrency=2)
    assert fake.max_in_flight == 2 and [a.text for a in answers] == [f"echo: {i}" for i in range(8)]  # type: ignore[union-attr]

    fake.delay_s, fake.max_in_flight = 0.0, 0
    limited = provider(fake, rpm=600)  # 10 a second, burst of 1
    start = time.perf_counter()
    complete_many(limited, [LLMRequest(prompt=f"r{i}") for i in range(5)], concurrency=5)
    assert time.perf_counter() - start >= 0.38  # four waits of 0.1 s after the first token


def test_failures_come_back_in_place_when_asked(fake: FakeLLMServer) -> None:
    fake.fail_next(400, message="nope")
    results = complete_many(provider(fake), [LLMRequest(prompt="a")], concurrency=1, return_exceptions=True)
    assert isinstance(results[0], LLMRequestError)
