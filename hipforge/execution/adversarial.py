"""Adversarial variants of a trial's inputs, which expose kernels that quietly compute in less precision
than their float32 outputs claim: reading inputs as float16 or bfloat16, or accumulating in half.

On a task's own randn inputs such a kernel often passes 1e-4, most of all through reductions, where
rounding errors of random sign average out. Each kind here defeats that: values beyond float16's range,
per-element scales so a few terms dominate a sum, and values that differ only below half precision's
mantissa, so rounding them collapses them all one way (a bias no sum averages out).

The trusted reference process and the untrusted candidate process each build a trial's inputs and then
call ``transform`` on them; both must get the same bits. So a transform uses only exactly rounded
arithmetic (powers of two, +, -, *, floor) on the values and integer hashing of element indices and the
seed: no RNG state and no transcendental functions, whose last bits differ between devices and libraries.
"""

from __future__ import annotations

import math
from typing import Any

KINDS: tuple[str, ...] = ("fp16_range", "mixed_scale", "low_mantissa", "large_offset")

_DESCRIPTIONS = {
    "fp16_range": "inputs scaled by a power of two beyond float16's range (|x| up to 2^18)",
    "mixed_scale": "inputs with per-element power-of-two scales from 2^-8 to 2^8",
    "low_mantissa": "inputs near a common offset that differ only below float16's and bfloat16's precision",
    "large_offset": "inputs near a large common offset, a few units apart, that differ only below half precision",
}

_MASK = 0xFFFFFFFF
_RANGE_TOP = 18  # fp16_range: max |x| lands in [2^17, 2^18), beyond float16's largest value 65504
_SCALES = 8  # mixed_scale: factors 2^-8 .. 2^8, within float16's normal range for randn values
# low_mantissa / large_offset: the offset's exponent. Small keeps sums of offsets well-conditioned;
# large spreads values a few units apart, so shift-invariant ops (softmax) still see them differ.
_OFFSETS = {"low_mantissa": 6, "large_offset": 13}
# of the tolerance: an honest kernel summing in another order may be 100x further off (a naive running sum
# against a blocked BLAS: translator matmuls at 4096 missed a 0.05 headroom on the float16-range variant)
_USABLE_HEADROOM = 0.01


def describe(kind: str) -> str:
    """A short phrase for verdict messages, e.g. "inputs scaled ... beyond float16's range"."""
    _check(kind)
    return _DESCRIPTIONS[kind]


def transform(kind: str, inputs: list[Any], seed: int) -> list[Any]:
    """The inputs of one trial rewritten by ``kind``: floating-point tensors change (same shape, dtype and
    device, as new tensors), everything else passes through. Deterministic in (kind, values, seed)."""
    import torch

    _check(kind)
    return [_rewrite(kind, x, seed, position) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for position, x in enumerate(inputs)]


def usable(reference_out: list[Any], reference_fp64_out: list[Any], atol: float, rtol: float) -> bool:
    """Whether a variant can judge a task: every output a floating tensor, the float32 reference finite and
    within a hundredth of the tolerance of its float64 twin (so an honest kernel with a different, even a less
    accurate, order of operations passes). Integer outputs (argmax, indices) are refused: crafted values
    tie often, and ties break differently between honest kernels."""
    import torch

    from hipforge.execution.numerics import fp64_gap

    if len(reference_out) != len(reference_fp64_out) or not reference_out:
        return False
    pairs = list(zip(reference_out, reference_fp64_out, strict=True))
    if not all(isinstance(a, torch.Tensor) and a.is_floating_point() for a, _ in pairs):
        return False
    if not all(bool(torch.isfinite(a).all()) for a, _ in pairs):
        return False
    pairs = [(a, b) for a, b in pairs if a.numel()]
    return not pairs or fp64_gap(pairs, atol, rtol) <= _USABLE_HEADROOM


def _check(kind: str) -> None:
    if kind not in _DESCRIPTIONS:
        raise ValueError(f"unknown adversarial kind {kind!r}; known kinds: {', '.join(KINDS)}")


def _rewrite(kind: str, x: Any, seed: int, position: int) -> Any:
    import torch

    if x.numel() == 0:
        return x.clone()
    # Half inputs are rewritten in float32 and rounded back once (a correctly rounded cast).
    work = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32
    v = x.detach().to(work)
    if kind == "fp16_range":
        out = _to_range(v)
    elif kind == "mixed_scale":
        out = _mixed(v, seed, position)
    else:
        out = _offset(v, seed, position, _OFFSETS[kind])
    return out.to(x.dtype).reshape(x.shape)


def _to_range(v: Any) -> Any:
    top = float(v.abs().max())
    if top == 0.0 or not math.isfinite(top):
        return v.clone()
    _, exponent = math.frexp(top)  # top = m * 2^exponent, m in [0.5, 1)
    return v * 2.0 ** (_RANGE_TOP - exponent)


def _mixed(v: Any, seed: int, position: int) -> Any:
    import torch

    factors = torch.tensor([2.0 ** k for k in range(-_SCALES, _SCALES + 1)], dtype=v.dtype, device=v.device)
    index = _hash(v.numel(), seed, position, v.device) % (2 * _SCALES + 1)
    return v * factors[index].reshape(v.shape)


def _offset(v: Any, seed: int, position: int, exponent: int) -> Any:
    """c * (1 + u * 2^-11) with c = 2^exponent and u in [1/4, 1): below c's half ulp in float16 (2^-11)
    and bfloat16 (2^-8), so both round every element down to c; exact in float32 (23 mantissa bits)."""
    import torch

    # u's 12 bits mix the hash with the value's own bits, so a variant still follows its inputs.
    bits = v.contiguous().view(torch.int64 if v.dtype == torch.float64 else torch.int32).reshape(-1)
    mixed = _hash(v.numel(), seed, position, v.device) ^ (bits.to(torch.int64) & _MASK)
    steps = mixed % 3072 + 1024  # u * 4096, in [1024, 4096)
    c = 2.0 ** exponent
    return (c + steps.to(v.dtype) * (c * 2.0 ** -23)).reshape(v.shape)


def _hash(n: int, seed: int, position: int, device: Any) -> Any:
    """A 32-bit integer hash of each flat index, salted by the seed and the input's position. Products stay
    below 2^63, so int64 arithmetic never overflows and every device gets the same bits."""
    import torch

    salt = (seed * 0x9E3779B1 + position * 0x85EBCA77 + 0x27D4EB2F) & _MASK
    h = (torch.arange(n, dtype=torch.int64, device=device) + salt) & _MASK
    for _ in range(2):
        h = (((h >> 16) ^ h) * 0x45D9F3B) & _MASK
    return (h >> 16) ^ h
