"""What an agent asks a model and what comes back, and the protocol every provider follows."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant"):
            raise ValueError(f"message role must be system, user or assistant, not {self.role!r}")


@dataclass(frozen=True)
class LLMRequest:
    """A prompt (one user turn, optionally with a system turn) or a full conversation.

    `seed` is sent to the model and is part of the cache key: to draw k different samples of
    one prompt reproducibly, give them k seeds.
    """

    prompt: str | None = None
    messages: Sequence[Message | Mapping[str, str]] | None = None
    system: str | None = None
    temperature: float = 0.0
    max_output_tokens: int = 8192
    seed: int | None = None
    n: int = 1

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of prompt= or messages=")
        if self.n < 1:
            raise ValueError(f"n must be at least 1, not {self.n}")
        if self.messages is not None:
            turns = tuple(
                m if isinstance(m, Message) else Message(m["role"], m["content"]) for m in self.messages
            )
            if self.system is not None:
                turns = (Message("system", self.system), *turns)
            # Frozen dataclass: normalize once so hashing and cache keys see one canonical form.
            object.__setattr__(self, "messages", turns)
            object.__setattr__(self, "system", None)

    def turns(self) -> tuple[Message, ...]:
        """The conversation in order, the system turn (if any) first."""
        if self.messages is not None:
            return tuple(self.messages)  # type: ignore[arg-type]
        head = (Message("system", self.system),) if self.system is not None else ()
        return (*head, Message("user", self.prompt or ""))

    def params(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_output_tokens": self.max_output_tokens,
            "seed": self.seed,
            "n": self.n,
        }

    def render(self) -> str:
        """The prompt as stored in llm_calls: plain text for a lone user turn, JSON turns otherwise."""
        turns = self.turns()
        if len(turns) == 1:
            return turns[0].content
        return json.dumps([{"role": t.role, "content": t.content} for t in turns], ensure_ascii=False)


@dataclass(frozen=True)
class LLMResponse:
    """`text` is the first of `texts` (n > 1 asks for several). Tokens cover all of them.

    latency_s is the wall time the caller waited, retries included; cost_usd is None for a model
    missing from the price table and 0 for a cache hit (nothing was spent).
    """

    text: str
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float
    cost_usd: float | None
    cached: bool
    model: str
    provider: str
    texts: tuple[str, ...] = field(default=())
    attempts: int = 1
    cache_key: str | None = None

    def __post_init__(self) -> None:
        if not self.texts:
            object.__setattr__(self, "texts", (self.text,))


@runtime_checkable
class LLMProvider(Protocol):
    """Anything that answers an LLMRequest: a remote API, a local model, a deterministic function."""

    name: str
    model: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...

    async def acomplete(self, request: LLMRequest) -> LLMResponse: ...
