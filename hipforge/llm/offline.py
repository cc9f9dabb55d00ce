"""A deterministic provider around a Python function, so offline agents share the LLM interface."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from hipforge.llm.request import LLMRequest, LLMResponse

Answer = Callable[[LLMRequest], "str | list[str]"]


def estimate_tokens(text: str) -> int:
    """About four characters a token for code and English: accounting only, no tokenizer needed."""
    return (len(text) + 3) // 4


class OfflineProvider:
    """`answer(request)` returns the text, or a list of n texts when request.n > 1. It must be pure:
    the same request always gets the same answer (that is what makes the embedded default reproducible)."""

    name = "offline"

    def __init__(self, answer: Answer, model: str | None = None) -> None:
        self.answer = answer
        self.model = model or getattr(answer, "__name__", "offline")

    def __repr__(self) -> str:
        return f"OfflineProvider(model={self.model!r})"

    def complete(self, request: LLMRequest) -> LLMResponse:
        start = time.perf_counter()
        produced = self.answer(request)
        texts = (produced,) if isinstance(produced, str) else tuple(produced)
        if len(texts) != request.n:
            raise ValueError(f"offline answer {self.model!r} gave {len(texts)} texts for n={request.n}")
        return LLMResponse(
            text=texts[0],
            texts=texts,
            input_tokens=sum(estimate_tokens(t.content) for t in request.turns()),
            output_tokens=sum(estimate_tokens(t) for t in texts),
            latency_s=time.perf_counter() - start,
            cost_usd=0.0,
            cached=False,
            model=self.model,
            provider=self.name,
        )

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        # Offline answers may be CPU-heavy (a deterministic translator): keep the event loop free.
        return await asyncio.to_thread(self.complete, request)
