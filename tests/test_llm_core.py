"""Provider-independent parts: requests, cache keys, prices, backoff, rate limits, offline, accounting."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from pathlib import Path

import pytest

from hipforge.llm import (
    CallLog,
    GeminiProvider,
    LLMClient,
    LLMConfigError,
    LLMProvider,
    LLMRequest,
    OfflineProvider,
    OpenAICompatibleProvider,
    ResponseCache,
    RetryPolicy,
    TokenBucket,
    TransformersProvider,
    cache_key,
    cost_usd,
    make_provider,
)
from hipforge.llm.base import parse_retry_after
from hipforge.store import Warehouse


def shout(request: LLMRequest) -> str | list[str]:
    text = request.turns()[-1].content.upper()
    return [text] * request.n if request.n > 1 else text


def test_request_forms_and_rendering() -> None:
    simple = LLMRequest(prompt="hi")
    assert [(t.role, t.content) for t in simple.turns()] == [("user", "hi")] and simple.render() == "hi"
    chat = LLMRequest(
        messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], system="s"
    )
    assert [t.role for t in chat.turns()] == ["system", "user", "assistant"]
    assert json.loads(chat.render())[0] == {"role": "system", "content": "s"}
    assert LLMRequest(prompt="a", system="s").turns() == LLMRequest(messages=chat.turns()[:2]).turns()
    for bad in ({}, {"prompt": "a", "messages": []}, {"prompt": "a", "n": 0}):
        with pytest.raises(ValueError):
            LLMRequest(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="role"):
        LLMRequest(messages=[{"role": "tool", "content": "x"}])


def test_cache_key_covers_everything_that_shapes_the_answer() -> None:
    base = cache_key("gemini", "m", LLMRequest(prompt="p", seed=1))
    assert base == cache_key("gemini", "m", LLMRequest(messages=[{"role": "user", "content": "p"}], seed=1))
    variants = [
        cache_key("openai", "m", LLMRequest(prompt="p", seed=1)),
        cache_key("gemini", "m2", LLMRequest(prompt="p", seed=1)),
        cache_key("gemini", "m", LLMRequest(prompt="p", seed=2)),
        cache_key("gemini", "m", LLMRequest(prompt="p", seed=1, temperature=0.5)),
        cache_key("gemini", "m", LLMRequest(prompt="p", seed=1, system="s")),
        cache_key("gemini", "m", LLMRequest(prompt="p", seed=1, n=2)),
    ]
    assert len({base, *variants}) == 7


def test_prices() -> None:
    assert cost_usd("gemini-2.5-flash", 1_000_000, 1_000_000) == pytest.approx(2.80)
    assert cost_usd("models/gemini-2.5-flash-001", 1000, 0) == pytest.approx(0.0003)  # family price
    assert cost_usd("gemini-2.5-flash-lite", 1_000_000, 0) == pytest.approx(0.10)  # longest prefix wins
    assert cost_usd("my-model", 10, 10) is None  # unknown price is not zero
    assert cost_usd("my-model", 1_000_000, 0, {"my-model": (2.0, 4.0)}) == pytest.approx(2.0)
    assert cost_usd("gemini-2.5-flash", 1_000_000, 0, {"gemini-2.5-flash": (1.0, 1.0)}) == pytest.approx(1.0)


def test_backoff_and_retry_after() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, max_retry_after=30.0)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = [policy.delay(attempt) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays) and len(set(delays)) > 1  # jittered
    assert policy.delay(1, retry_after=12.0) == 12.0 and policy.delay(1, retry_after=600.0) == 30.0
    assert (
        parse_retry_after("7") == 7.0
        and parse_retry_after(None) is None
        and parse_retry_after("soon") is None
    )
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= parse_retry_after(in_ten) <= 10  # type: ignore[operator]


def test_token_bucket_spaces_requests() -> None:
    bucket = TokenBucket(rpm=1200, burst=2)  # 20 a second

    async def take(k: int) -> float:
        start = time.perf_counter()
        await asyncio.gather(*(bucket.acquire() for _ in range(k)))
        return time.perf_counter() - start

    assert asyncio.run(take(2)) < 0.1  # the burst is free
    assert 0.18 <= asyncio.run(take(4)) < 1.0  # then one every 50 ms


def test_offline_provider_through_the_client(warehouse: Warehouse, tmp_path: Path) -> None:
    offline = OfflineProvider(shout)
    assert isinstance(offline, LLMProvider) and offline.model == "shout"
    client = LLMClient(offline, ResponseCache(tmp_path / "cache"), CallLog(warehouse, "run-1", "summarizer"))
    answer = client.complete(LLMRequest(prompt="make it fast"))
    assert (answer.text, answer.provider, answer.cost_usd, answer.input_tokens) == (
        "MAKE IT FAST",
        "offline",
        0.0,
        3,
    )
    many = client.complete_many([LLMRequest(prompt=f"t{i}", n=2) for i in range(5)], concurrency=2)
    assert [m.texts for m in many] == [(f"T{i}", f"T{i}") for i in range(5)]  # type: ignore[union-attr]
    again = client.for_agent("auditor").complete(LLMRequest(prompt="make it fast"))
    assert again.cached and again.text == "MAKE IT FAST"
    with warehouse.connect(read_only=True) as con:
        rows = con.execute("SELECT agent, cached, response FROM llm_calls ORDER BY created_at").fetchall()
    assert len(rows) == 7 and rows[-1] == ("auditor", True, "MAKE IT FAST")
    assert sorted(json.loads(r[2]) for r in rows[1:6]) == [
        [f"T{i}", f"T{i}"] for i in range(5)
    ]  # n > 1: all texts


def test_failures_of_any_kind_are_recorded(warehouse: Warehouse) -> None:
    def broken(request: LLMRequest) -> str:
        raise ZeroDivisionError("offline agent bug")

    client = LLMClient(OfflineProvider(broken), log=CallLog(warehouse, "run-1", "filter"))
    with pytest.raises(ZeroDivisionError):
        client.complete(LLMRequest(prompt="x"))
    with warehouse.connect(read_only=True) as con:
        assert con.execute("SELECT error, attempts FROM llm_calls").fetchone() == (
            "ZeroDivisionError: offline agent bug",
            1,
        )


def test_call_log_batches_through_one_writer(warehouse: Warehouse) -> None:
    log = CallLog(warehouse, "run-9", "translator", flush_every=3)
    other = log.for_agent("optimizer")
    row = {"provider": "offline", "model": "m", "cache_key": "k", "prompt": "p", "params": {}}
    with log.batch():
        log.record(**row)
        other.record(**row)
        assert log._sink is other._sink and len(log._sink.rows) == 2  # buffered, not yet written
        log.record(**row)  # third row: the batch reaches flush_every and lands
        assert log._sink.rows == []
        other.record(**row)
    with warehouse.connect(read_only=True) as con:
        agents = sorted(
            r[0] for r in con.execute("SELECT agent FROM llm_calls WHERE run_id = 'run-9'").fetchall()
        )
    assert agents == ["optimizer", "optimizer", "translator", "translator"]


def test_sync_complete_inside_a_running_loop() -> None:
    async def from_async_code() -> str:
        return OfflineProvider(shout).complete(LLMRequest(prompt="ok")).text

    assert asyncio.run(from_async_code()) == "OK"


def test_make_provider() -> None:
    assert isinstance(make_provider("gemini", "gemini-2.5-pro"), GeminiProvider)
    assert isinstance(make_provider("openai", "m", base_url="http://h:8000/v1"), OpenAICompatibleProvider)
    assert isinstance(make_provider("transformers", "/ckpt"), TransformersProvider)
    with pytest.raises(LLMConfigError, match="base_url"):
        make_provider("openai", "m")
    with pytest.raises(LLMConfigError, match="unknown provider kind"):
        make_provider("claude", "m")  # type: ignore[arg-type]


def test_cache_modes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cache mode"):
        ResponseCache(tmp_path, "write_only")  # type: ignore[arg-type]
    off = ResponseCache(tmp_path, "off")
    off.put("ab" * 32, {"texts": ["x"]})
    assert off.get("ab" * 32) is None and not any(tmp_path.iterdir())
