"""What agents hold: a provider wrapped with the response cache and the llm_calls accounting."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import replace

from hipforge.llm.base import run_sync
from hipforge.llm.cache import ResponseCache, cache_key
from hipforge.llm.calllog import CallLog
from hipforge.llm.errors import CacheMiss, LLMError
from hipforge.llm.request import LLMProvider, LLMRequest, LLMResponse


class LLMClient:
    """An LLMProvider itself, so an agent cannot tell a cached, logged client from a bare provider."""

    def __init__(self, provider: LLMProvider, cache: ResponseCache | None = None, log: CallLog | None = None):
        self.provider = provider
        self.cache = cache
        self.log = log
        self.name = provider.name
        self.model = provider.model

    def __repr__(self) -> str:
        mode = self.cache.mode if self.cache else "off"
        return f"LLMClient({self.provider!r}, cache={mode}, agent={self.agent!r})"

    @property
    def agent(self) -> str:
        return self.log.agent if self.log else "unknown"

    def for_agent(self, agent: str) -> LLMClient:
        """The same provider and cache, calls recorded under another agent's name."""
        return LLMClient(self.provider, self.cache, self.log.for_agent(agent) if self.log else None)

    def complete(self, request: LLMRequest) -> LLMResponse:
        return run_sync(self.acomplete(request))

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        key = cache_key(self.name, self.model, request)
        start = time.perf_counter()
        hit = self.cache.get(key) if self.cache else None
        if hit is not None:
            response = LLMResponse(
                text=hit["texts"][0],
                texts=tuple(hit["texts"]),
                input_tokens=hit["input_tokens"],
                output_tokens=hit["output_tokens"],
                latency_s=time.perf_counter() - start,
                cost_usd=0.0,
                cached=True,
                model=self.model,
                provider=self.name,
                attempts=0,
                cache_key=key,
            )
            self._record(request, key, response)
            return response
        try:
            if self.cache and self.cache.mode == "replay":
                raise CacheMiss(self.agent, key, self.name, self.model)
            response = replace(await self.provider.acomplete(request), cache_key=key)
        except Exception as err:  # recorded whatever broke, then re-raised untouched
            self._record(request, key, err, time.perf_counter() - start)
            raise
        if self.cache:
            self.cache.put(
                key,
                {
                    "key": key,
                    "provider": self.name,
                    "model": self.model,
                    "turns": [{"role": t.role, "content": t.content} for t in request.turns()],
                    "params": request.params(),
                    "texts": list(response.texts),
                    "input_tokens": response.input_tokens,
                    "output_tokens": response.output_tokens,
                    "cost_usd": response.cost_usd,
                    "latency_s": response.latency_s,
                },
            )
        self._record(request, key, response)
        return response

    def _record(
        self, request: LLMRequest, key: str, outcome: LLMResponse | Exception, latency_s: float | None = None
    ) -> None:
        if self.log is None:
            return
        common = {
            "provider": self.name,
            "model": self.model,
            "cache_key": key,
            "prompt": request.render(),
            "params": request.params(),
        }
        if isinstance(outcome, Exception):
            # A provider bug (not an LLMError) still got at most one request out.
            attempts = outcome.attempts if isinstance(outcome, LLMError) else 1
            self.log.record(
                **common, error=f"{type(outcome).__name__}: {outcome}", latency_s=latency_s, attempts=attempts
            )
            return
        self.log.record(
            **common,
            response=outcome.text if request.n == 1 else json.dumps(list(outcome.texts)),
            input_tokens=outcome.input_tokens,
            output_tokens=outcome.output_tokens,
            latency_s=outcome.latency_s,
            cost_usd=outcome.cost_usd,
            cached=outcome.cached,
            attempts=outcome.attempts,
        )

    def complete_many(
        self, requests: Sequence[LLMRequest], concurrency: int = 8, return_exceptions: bool = False
    ) -> list[LLMResponse | LLMError]:
        return run_sync(self.acomplete_many(requests, concurrency, return_exceptions))

    async def acomplete_many(
        self, requests: Sequence[LLMRequest], concurrency: int = 8, return_exceptions: bool = False
    ) -> list[LLMResponse | LLMError]:
        """Answers in request order; rows are written in batches while the burst runs."""
        if self.log is None:
            return await acomplete_many(self, requests, concurrency, return_exceptions)
        with self.log.batch():
            return await acomplete_many(self, requests, concurrency, return_exceptions)


async def acomplete_many(
    provider: LLMProvider,
    requests: Sequence[LLMRequest],
    concurrency: int = 8,
    return_exceptions: bool = False,
) -> list[LLMResponse | LLMError]:
    """Answers in request order, at most `concurrency` in flight; return_exceptions keeps LLMErrors."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    gate = asyncio.Semaphore(concurrency)

    async def one(request: LLMRequest) -> LLMResponse | LLMError:
        async with gate:
            try:
                return await provider.acomplete(request)
            except LLMError as err:
                if return_exceptions:
                    return err
                raise

    tasks = [asyncio.ensure_future(one(r)) for r in requests]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:  # one failure ends the burst: do not leave the rest spending money
            task.cancel()
        raise


def complete_many(
    provider: LLMProvider,
    requests: Sequence[LLMRequest],
    concurrency: int = 8,
    return_exceptions: bool = False,
) -> list[LLMResponse | LLMError]:
    return run_sync(acomplete_many(provider, requests, concurrency, return_exceptions))
