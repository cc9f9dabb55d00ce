"""GeminiProvider against a fake generateContent server: tokens, retries, errors, key hygiene, cache."""

from __future__ import annotations

import json
import logging
import socket
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hipforge.llm import (
    CacheMiss,
    CallLog,
    GeminiProvider,
    LLMClient,
    LLMConfigError,
    LLMRequest,
    LLMRequestError,
    LLMRetriesExhausted,
    ResponseCache,
    RetryPolicy,
)
from hipforge.store import Warehouse
from tests.fake_gemini import FakeLLMServer

KEY = "AIzaFAKE-0123456789-never-leak-me"
FAST = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05, max_retry_after=0.3)


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake key for the fake server: the tests never need (or see) a real one."""
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def make_client(
    url: str,
    warehouse: Warehouse,
    tmp_path: Path,
    mode: str = "read_write",
    agent: str = "translator",
    **kw: Any,
) -> LLMClient:
    provider = GeminiProvider(
        base_url=url, retry=kw.pop("retry", FAST), timeout_s=kw.pop("timeout_s", 10), **kw
    )
    return LLMClient(provider, ResponseCache(tmp_path / "cache", mode), CallLog(warehouse, "run-42", agent))  # type: ignore[arg-type]


def calls(warehouse: Warehouse) -> list[dict[str, Any]]:
    with warehouse.connect(read_only=True) as con:
        cursor = con.execute("SELECT * FROM llm_calls ORDER BY created_at, cached")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_answer_and_tokens_are_recorded(fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path) -> None:
    client = make_client(fake.url, warehouse, tmp_path)
    request = LLMRequest(prompt="write a relu kernel", system="You write HIP.", temperature=0.2, seed=7)
    response = client.complete(request)

    assert response.text == "echo: write a relu kernel"
    # 4 prompt words + "You write HIP." 3; output: 5 answer words + 7 thinking tokens (billed as output)
    assert (response.input_tokens, response.output_tokens) == (7, 12)
    assert response.cost_usd == pytest.approx((7 * 0.30 + 12 * 2.50) / 1e6)
    assert (response.provider, response.model, response.cached, response.attempts) == (
        "gemini",
        "gemini-2.5-flash",
        False,
        1,
    )

    [seen] = fake.requests
    assert seen.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert seen.headers["x-goog-api-key"] == KEY  # the key travels in a header, never in the URL
    assert seen.body["systemInstruction"]["parts"][0]["text"] == "You write HIP."
    assert seen.body["generationConfig"] == {
        "temperature": 0.2,
        "seed": 7,
        "maxOutputTokens": 8192,
        "candidateCount": 1,
    }

    [row] = calls(warehouse)
    assert row["provider"] == "gemini" and row["agent"] == "translator" and row["run_id"] == "run-42"
    assert (row["input_tokens"], row["output_tokens"], row["attempts"], row["cached"]) == (7, 12, 1, False)
    assert row["response"] == response.text and row["error"] is None
    assert row["cost_usd"] == pytest.approx(response.cost_usd) and row["latency_s"] > 0
    assert json.loads(row["params"])["seed"] == 7 and row["cache_key"] == response.cache_key


def test_conversation_turns_map_to_gemini_roles(
    fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path
) -> None:
    turns = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "first try"},
        {"role": "assistant", "content": "a kernel"},
        {"role": "user", "content": "it failed to compile"},
    ]
    response = make_client(fake.url, warehouse, tmp_path).complete(LLMRequest(messages=turns, n=2))
    assert response.texts == ("echo: it failed to compile", "echo: it failed to compile #1")
    body = fake.requests[0].body
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["systemInstruction"]["parts"][0]["text"] == "Be terse."
    assert json.loads(calls(warehouse)[0]["prompt"])[2] == {"role": "assistant", "content": "a kernel"}


def test_429_is_retried_honouring_retry_after(
    fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path
) -> None:
    fake.fail_next(429, message="Resource exhausted", retry_after="30")  # capped to FAST.max_retry_after
    start = time.perf_counter()
    response = make_client(fake.url, warehouse, tmp_path).complete(LLMRequest(prompt="p"))
    assert time.perf_counter() - start >= 0.3  # waited what the server asked (capped), not 0.01 s
    assert response.attempts == 2 and len(fake.requests) == 2
    [row] = calls(warehouse)
    assert row["attempts"] == 2 and row["error"] is None


def test_429_retry_info_in_the_body_is_honoured(
    fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path
) -> None:
    info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.25s"}
    fake.fail_next(429, message="Quota exceeded", details=[info])
    start = time.perf_counter()
    assert make_client(fake.url, warehouse, tmp_path).complete(LLMRequest(prompt="p")).attempts == 2
    assert time.perf_counter() - start >= 0.25


def test_500s_until_retries_run_out(fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path) -> None:
    fake.fail_next(500, count=10, message="internal")
    with pytest.raises(LLMRetriesExhausted, match=r"4 attempts.*gemini-2.5-flash.*HTTP 500") as caught:
        make_client(fake.url, warehouse, tmp_path).complete(LLMRequest(prompt="p"))
    assert caught.value.attempts == 4 and caught.value.status == 500 and len(fake.requests) == 4
    [row] = calls(warehouse)
    assert row["response"] is None and "LLMRetriesExhausted" in row["error"] and "HTTP 500" in row["error"]
    assert row["attempts"] == 4 and row["cost_usd"] is None


def test_400_is_not_retried(fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path) -> None:
    fake.fail_next(400, message="Invalid JSON payload")
    with pytest.raises(
        LLMRequestError, match=r"gemini model 'gemini-2.5-flash': HTTP 400.*Invalid JSON"
    ) as caught:
        make_client(fake.url, warehouse, tmp_path).complete(LLMRequest(prompt="p"))
    assert caught.value.status == 400 and len(fake.requests) == 1
    assert calls(warehouse)[0]["attempts"] == 1


def test_timeout_is_retried(fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path) -> None:
    fake.fail_next(503, hang_s=3.0)  # never answers within the 0.5 s timeout
    response = make_client(fake.url, warehouse, tmp_path, timeout_s=0.5).complete(LLMRequest(prompt="slow"))
    assert response.text == "echo: slow" and response.attempts == 2


def test_refused_connection_is_retried_then_reported(warehouse: Warehouse, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(LLMRetriesExhausted, match="ConnectError"):
        make_client(url, warehouse, tmp_path).complete(LLMRequest(prompt="p"))
    assert calls(warehouse)[0]["attempts"] == 4


def test_api_key_never_leaks(
    fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, httpx and google-genai included
    client = make_client(fake.url, warehouse, tmp_path)
    client.complete(LLMRequest(prompt="fine"))
    fake.fail_next(403, message=f"API key {KEY} is not valid")  # a server that echoes the key back
    fake.fail_next(503, count=4, message=f"overloaded for key {KEY}")
    errors = []
    for prompt in ("bad key", "overloaded"):
        with pytest.raises((LLMRequestError, LLMRetriesExhausted)) as caught:
            client.complete(LLMRequest(prompt=prompt))
        errors.append(caught.value)
    assert "HTTP 403" in str(errors[0]) and "'gemini-2.5-flash'" in str(errors[0])
    assert fake.requests[0].headers["x-goog-api-key"] == KEY  # it was used...

    rows = calls(warehouse)  # ...and appears nowhere we write
    assert len(rows) == 3 and all(KEY not in str(value) for row in rows for value in row.values())
    for err in errors:
        assert KEY not in str(err) and KEY not in repr(err)
        assert KEY not in "".join(traceback.format_exception(err))
    assert KEY not in caplog.text and "retrying" in caplog.text
    assert (
        KEY not in repr(client) and KEY not in repr(client.provider) and KEY not in str(vars(client.provider))
    )
    assert all(KEY not in p.read_text() for p in (tmp_path / "cache").rglob("*.json"))


def test_missing_key_is_a_clear_error(
    fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(LLMConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        make_client(fake.url, warehouse, tmp_path).complete(LLMRequest(prompt="p"))
    assert fake.requests == [] and calls(warehouse)[0]["attempts"] == 0


def test_second_identical_call_is_served_from_cache(
    fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path
) -> None:
    client = make_client(fake.url, warehouse, tmp_path)
    first = client.complete(LLMRequest(prompt="same", seed=1))
    second = client.complete(LLMRequest(prompt="same", seed=1))
    assert len(fake.requests) == 1
    assert second.cached and second.text == first.text and second.cost_usd == 0.0 and second.attempts == 0
    assert (second.input_tokens, second.output_tokens) == (first.input_tokens, first.output_tokens)
    client.complete(LLMRequest(prompt="same", seed=2))  # another seed is another sample
    assert len(fake.requests) == 2
    assert sorted(r["cached"] for r in calls(warehouse)) == [False, False, True]


def test_replay_serves_recorded_answers_and_refuses_new_prompts(
    fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path
) -> None:
    make_client(fake.url, warehouse, tmp_path).complete(LLMRequest(prompt="recorded"))
    replay = make_client(fake.url, warehouse, tmp_path, mode="replay", agent="optimizer")
    assert replay.complete(LLMRequest(prompt="recorded")).cached
    with pytest.raises(CacheMiss, match=r"agent 'optimizer' \(cache key [0-9a-f]{64}") as caught:
        replay.complete(LLMRequest(prompt="never seen"))
    assert caught.value.agent == "optimizer" and caught.value.key in str(caught.value)
    assert len(fake.requests) == 1  # replay never reached the server
    miss = [r for r in calls(warehouse) if r["error"]]
    assert len(miss) == 1 and miss[0]["agent"] == "optimizer" and miss[0]["attempts"] == 0


def test_concurrency_limit_is_respected(fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path) -> None:
    fake.delay_s = 0.25  # long enough that three requests surely overlap on a loaded machine
    client = make_client(fake.url, warehouse, tmp_path)
    requests = [LLMRequest(prompt=f"task {i}") for i in range(9)]
    start = time.perf_counter()
    answers = client.complete_many(requests, concurrency=3)
    assert time.perf_counter() - start >= 3 * 0.25
    assert fake.max_in_flight == 3
    assert [a.text for a in answers] == [f"echo: task {i}" for i in range(9)]  # type: ignore[union-attr]
    assert len(calls(warehouse)) == 9


def test_api_version_is_configurable(fake: FakeLLMServer, warehouse: Warehouse, tmp_path: Path) -> None:
    # google-genai 3.x calls /v1/ by default; the v1beta surface is one option away.
    make_client(fake.url, warehouse, tmp_path, api_version="v1beta", model="gemini-2.5-pro").complete(
        LLMRequest(prompt="p")
    )
    assert fake.requests[0].path == "/v1beta/models/gemini-2.5-pro:generateContent"
