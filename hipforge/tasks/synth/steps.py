"""What an operator produces when applied: a Step (PyTorch snippet plus shape rule) on a Tensor.

Tensors flow in one of four layouts: feat (B, F), seq (B, N, F), image (B, C, H, W) and volume
(B, C, D, H, W). The channel or feature size is always a named module-level constant, so a later
layer is sized by name and smoke scaling (which rewrites constants) keeps every layer consistent;
spatial sizes are only ever computed, by the shape rules, from the constants' values.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Layout = Literal["feat", "seq", "image", "volume"]
Shape = tuple[int, ...]
Env = Mapping[str, int | float]
Rule = Callable[[list[Shape], Env], Shape]
SPATIAL: dict[str, int] = {"feat": 0, "seq": 0, "image": 2, "volume": 3}


class ShapeError(ValueError):
    """A step cannot take the shape it is given."""


@dataclass(frozen=True)
class Tensor:
    var: str  # the forward variable holding it
    layout: Layout
    feature: str  # constant naming the channel (image, volume) or feature (feat, seq) size


@dataclass(frozen=True)
class Step:
    op: str
    summary: str  # plain words, for docstrings and specs
    reads: tuple[str, ...]  # forward variables it consumes, main input first
    expr: str  # forward expression over {0}, {1}, ... = reads
    out: Tensor
    rule: Rule
    constants: tuple[tuple[str, int | float], ...] = ()  # new module-level constants
    layers: tuple[str, ...] = ()  # __init__ statements
    new_input: tuple[str, tuple[str, ...]] | None = None  # an extra model input: (var, dim constants)


@dataclass(frozen=True)
class Context:
    """What a sampler may look at: the step number, constants so far, and earlier tensors with shapes."""

    index: int
    env: Mapping[str, int | float]
    earlier: tuple[tuple[Tensor, Shape], ...]


Sampler = Callable[[random.Random, Tensor, Shape, Context], "Step | None"]


def need(ok: bool, why: str) -> None:
    if not ok:
        raise ShapeError(why)


def conv_len(n: int, k: int, stride: int, pad: int, transposed: bool = False, extra: int = 0) -> int:
    out = (n - 1) * stride - 2 * pad + k + extra if transposed else (n + 2 * pad - k) // stride + 1
    need(out >= 1 and (transposed or n + 2 * pad >= k), f"a kernel of {k} does not fit a size of {n}")
    return out


def same(x: Tensor, var: str) -> Tensor:
    """The same layout and feature size under a new variable (shape-preserving steps)."""
    return Tensor(var, x.layout, x.feature)


def keep_shape(shapes: list[Shape], env: Env) -> Shape:
    return shapes[0]
