"""How well-conditioned a float32 computation is: the distance of its outputs from the same computation in
float64, in units of the tolerance (above 1, no float32 kernel can be judged at that tolerance)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def widened(values: list[Any]) -> list[Any]:
    """A model's arguments for its float64 twin: float32 tensors as float64, the rest as they are."""
    import torch

    return [v.double() if isinstance(v, torch.Tensor) and v.dtype == torch.float32 else v for v in values]


def fp64_gap(pairs: Iterable[tuple[Any, Any]], atol: float = 1e-4, rtol: float = 1e-4) -> float:
    """The largest distance of float32 outputs from their float64 twins, (float32, float64) pairs, in units
    of the tolerance."""
    return max(((a.double() - b).abs() / (atol + rtol * b.abs())).max().item() for a, b in pairs)
