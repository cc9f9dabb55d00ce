"""Price table: USD per million input and output tokens, matched by model name or its longest prefix."""

from __future__ import annotations

from collections.abc import Mapping

Prices = Mapping[str, tuple[float, float]]

# Gemini API list prices (text, prompts up to 200K tokens) as published mid-2025; Gemini bills
# "thinking" tokens as output, and the providers count them as such. Override per deployment.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.0-flash-lite": (0.075, 0.30),
}


def price_of(model: str, prices: Prices | None = None) -> tuple[float, float] | None:
    table = {**DEFAULT_PRICES, **(prices or {})}
    name = model.removeprefix("models/")
    if name in table:
        return table[name]
    # Versioned names ("gemini-2.5-flash-001") fall back to their family's price.
    prefixes = [k for k in table if name.startswith(k)]
    return table[max(prefixes, key=len)] if prefixes else None


def cost_usd(
    model: str, input_tokens: int | None, output_tokens: int | None, prices: Prices | None = None
) -> float | None:
    """None when the model has no price (unknown, not free); a local model is priced (0, 0)."""
    price = price_of(model, prices)
    if price is None or input_tokens is None or output_tokens is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
