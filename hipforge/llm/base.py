"""Shared machinery of remote providers: retries with backoff, a requests-per-minute bucket, sync calls."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from hipforge.llm.cost import Prices, cost_usd
from hipforge.llm.errors import LLMError, LLMRetriesExhausted, TransientLLMError
from hipforge.llm.request import LLMRequest, LLMResponse

log = logging.getLogger(__name__)
T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code, also when the caller already sits inside an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:  # a running loop cannot be re-entered
        return pool.submit(asyncio.run, coro).result()


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; a server's Retry-After wins, up to max_retry_after."""

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 300.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        # "Equal jitter": at least half the backoff, so clients that failed together spread out.
        return ceiling / 2 + random.uniform(0, ceiling / 2)


class TokenBucket:
    """Requests-per-minute limiter shared by threads and event loops.

    Each caller reserves a token under a thread lock and sleeps off its own debt, so no asyncio
    primitive is bound to one loop (sync `complete` runs each call in a fresh loop).
    """

    def __init__(self, rpm: float, burst: int = 1) -> None:
        if rpm <= 0:
            raise ValueError(f"rpm must be positive, not {rpm}")
        self.rate = rpm / 60.0
        self.capacity = float(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take one token; return how long to wait before using it."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await asyncio.sleep(wait)


@dataclass(frozen=True)
class Completion:
    """What one successful request returned, before accounting."""

    texts: tuple[str, ...]
    input_tokens: int | None
    output_tokens: int | None


class RemoteProvider(ABC):
    """A provider behind a network API: rate limit, retries and pricing around one `_send`."""

    name: str

    def __init__(
        self,
        model: str,
        retry: RetryPolicy | None = None,
        rpm: float | None = None,
        prices: Prices | None = None,
    ) -> None:
        self.model = model
        self.retry = retry or RetryPolicy()
        self.bucket = TokenBucket(rpm) if rpm else None
        self.prices = prices

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

    @abstractmethod
    async def _send(self, request: LLMRequest) -> Completion:
        """One request; raise TransientLLMError for what is worth retrying, LLMError for the rest."""

    def complete(self, request: LLMRequest) -> LLMResponse:
        return run_sync(self.acomplete(request))

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        start = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            if self.bucket:
                await self.bucket.acquire()
            try:
                done = await self._send(request)
                break
            except TransientLLMError as err:
                if attempt >= self.retry.max_attempts:
                    raise LLMRetriesExhausted(
                        f"gave up after {attempt} attempts; last error: {err}", attempt, err.status
                    ) from None
                delay = self.retry.delay(attempt, err.retry_after)
                log.warning(
                    "%s (attempt %d/%d), retrying in %.2fs", err, attempt, self.retry.max_attempts, delay
                )
                await asyncio.sleep(delay)
            except LLMError as err:
                err.attempts = attempt
                raise
        return LLMResponse(
            text=done.texts[0] if done.texts else "",
            texts=done.texts,
            input_tokens=done.input_tokens,
            output_tokens=done.output_tokens,
            latency_s=time.perf_counter() - start,
            cost_usd=cost_usd(self.model, done.input_tokens, done.output_tokens, self.prices),
            cached=False,
            model=self.model,
            provider=self.name,
            attempts=attempt,
        )
