"""Accounting: every LLM call, cached or not, answered or failed, becomes one llm_calls row."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from hipforge.store.warehouse import Warehouse


class _Sink:
    """The one writer behind every CallLog view of a run: rows buffer here and land in batches."""

    def __init__(self, warehouse: Warehouse, run_id: str, flush_every: int) -> None:
        self.warehouse = warehouse
        self.run_id = run_id
        self.flush_every = flush_every
        self.rows: list[dict[str, Any]] = []
        self.batch_depth = 0
        self.lock = threading.RLock()

    def flush(self) -> int:
        with self.lock:
            if not self.rows:
                return 0
            written = self.warehouse.insert("llm_calls", self.rows, self.run_id)
            self.rows.clear()
            return written


@dataclass
class CallLog:
    """Where an agent's calls are recorded: the warehouse, the Dagster run id, the agent's name.

    `for_agent` gives another agent a view that shares the same buffer and writer.
    """

    warehouse: Warehouse
    run_id: str
    agent: str = "unknown"
    flush_every: int = 64
    _sink: _Sink = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._sink = _Sink(self.warehouse, self.run_id, self.flush_every)

    def for_agent(self, agent: str) -> CallLog:
        view = replace(self, agent=agent)
        view._sink = self._sink
        return view

    def record(
        self,
        *,
        provider: str,
        model: str,
        cache_key: str,
        prompt: str,
        params: dict[str, Any],
        response: str | None = None,
        error: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        latency_s: float | None = None,
        cost_usd: float | None = None,
        cached: bool = False,
        attempts: int = 0,
    ) -> str:
        """Buffer one row; it is written at once unless inside `batch()` (then every flush_every rows)."""
        call_id = uuid.uuid4().hex
        row = {
            "call_id": call_id,
            "provider": provider,
            "model": model,
            "agent": self.agent,
            "cache_key": cache_key,
            "prompt": prompt,
            "response": response,
            "error": error,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "latency_s": latency_s,
            "cost_usd": cost_usd,
            "cached": cached,
            "attempts": attempts,
            "params": json.dumps(params),
        }
        with self._sink.lock:
            self._sink.rows.append(row)
            if self._sink.batch_depth == 0 or len(self._sink.rows) >= self._sink.flush_every:
                self._sink.flush()
        return call_id

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Hold rows in memory while a burst of calls runs; write them when the burst ends."""
        with self._sink.lock:
            self._sink.batch_depth += 1
        try:
            yield
        finally:
            with self._sink.lock:
                self._sink.batch_depth -= 1
                if self._sink.batch_depth == 0:
                    self._sink.flush()

    def flush(self) -> int:
        return self._sink.flush()

