"""Keyed block checksums of a trial's outputs: what the candidate commits right after its forward, before
it can know whether the trial's outputs will be shipped whole.

Per block of an output, the sum of its elements times ±1 weights: a public pattern whose start the trial's
key shifts, so no forward can know which weight meets which element. The reference's process computes the
same sums for its own output, and a bound: the largest difference two outputs within the tolerance can
have, Σ (atol + rtol·|ref|) over the block. A wrong output (a stale cache, a result from other inputs)
differs by about √n·error per block, far above the bound; an honest one is within it by construction, so
no honest kernel is ever lost to a checksum. The adjoint of a linear op costs what the op costs, so no
output can be checksummed for less than computing it.

Outputs larger than EvalConfig.whole_output_limit are not shipped whole (6 GB outputs would cost minutes per
trial through host memory): a full check compares their fine sums instead, signed and plain over blocks of
FINE_BLOCK, each within its own bound. That catches any error above the block's sum of tolerances, and any
bias (a downgrade's) in the plain sums; an error on one element smaller than that it can miss.
"""

from __future__ import annotations

import math
from typing import Any

CHUNK = 1 << 22  # the weight pattern's length
STEP = 16 * CHUNK  # elements summed per pass: bounds the temporaries of a 6 GB output
MIN_BLOCK, MAX_BLOCKS = 1 << 16, 1024
FINE_BLOCK = 256
_PATTERN: dict[str, Any] = {}


def block_size(numel: int) -> int:
    """A power of two between MIN_BLOCK and CHUNK: at most about MAX_BLOCKS sums per output."""
    size = MIN_BLOCK
    while size < CHUNK and size * MAX_BLOCKS < numel:
        size *= 2
    return size


def whole(numel: int, limit: int) -> bool:
    """Is an output of ``numel`` elements shipped whole for a full check (else as fine sums)?"""
    return numel <= limit


def _weights(device: Any, shift: int, numel: int) -> Any:
    """The public ±1 pattern, drawn once per device, rolled by the trial's secret shift (only as much of it
    as an output this small needs)."""
    import torch

    name = str(device)
    if name not in _PATTERN:
        gen = torch.Generator(device=device).manual_seed(0x5EED)
        bits = torch.randint(0, 2, (CHUNK,), generator=gen, device=device, dtype=torch.int8)
        _PATTERN[name] = bits.float() * 2 - 1
    if numel >= CHUNK:
        return torch.roll(_PATTERN[name], shift)
    return _PATTERN[name][(torch.arange(numel, device=device) - shift) % CHUNK]


def _fine_parts(t: Any, key: int | None) -> Any:
    """Per pass, (signed, plain) float64 sums over FINE_BLOCK blocks (signed is None without a key)."""
    import torch

    flat = t.detach().reshape(-1)
    wide = torch.float64 if flat.dtype in (torch.float64, torch.int64) else torch.float32
    w = _weights(flat.device, key % CHUNK, flat.numel()).to(wide) if key is not None else None
    for start in range(0, flat.numel(), STEP):
        part = flat[start:start + STEP].to(wide)
        rows = part.numel() // CHUNK * CHUNK  # whole pattern lengths, then the rest (padded to a block)
        head, rest = part[:rows].view(-1, CHUNK), part[rows:]
        pad = -rest.numel() % FINE_BLOCK
        tail = torch.nn.functional.pad(rest, (0, pad))
        plain = torch.cat([head.reshape(-1, FINE_BLOCK).sum(1), tail.view(-1, FINE_BLOCK).sum(1)])
        signed = None
        if w is not None:
            tail_w = torch.nn.functional.pad(w[:rest.numel()], (0, pad))
            signed = torch.cat([(head * w).reshape(-1, FINE_BLOCK).sum(1) if rows else plain[:0],
                                (tail * tail_w).view(-1, FINE_BLOCK).sum(1)]).double()
        yield signed, plain.double()


def fine(outputs: list[Any], key: int) -> list[Any]:
    """Per output, a float64 tensor (blocks, 2): signed and plain sums over FINE_BLOCK blocks, on its device."""
    import torch

    result = []
    for i, t in enumerate(outputs):
        parts = [torch.stack([s, p], dim=1) for s, p in _fine_parts(t, key + i)]
        result.append(torch.cat(parts) if parts else torch.zeros(0, 2, dtype=torch.float64))
    return result


def fine_bounds(outputs: list[Any], atol_rtol: list[tuple[float, float]]) -> list[Any]:
    """Per reference output, Σ (atol + rtol·|ref|) over each FINE_BLOCK block (inf where it is not finite).
    A pass of STEP elements at a time, as the sums: the tolerances of a whole 2 GB output took four such
    temporaries at once."""
    import torch

    result = []
    for t, (atol, rtol) in zip(outputs, atol_rtol, strict=True):
        flat = t.detach().reshape(-1)
        parts = [p for start in range(0, flat.numel(), STEP)
                 for _, p in _fine_parts(_tolerance(flat[start:start + STEP], atol, rtol), None)]
        result.append(torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64))
    return result


def _tolerance(ref: Any, atol: float, rtol: float) -> Any:
    import torch

    r = ref.double() if ref.dtype == torch.float64 else ref.float()
    return torch.where(r.isfinite(), atol + rtol * r.abs(), torch.full_like(r, math.inf))


def _coarse(fine_sums: Any, numel: int) -> list[float]:
    import torch

    group = block_size(numel) // FINE_BLOCK
    pad = -fine_sums.numel() % group
    return torch.nn.functional.pad(fine_sums, (0, pad)).view(-1, group).sum(1).tolist()


def sums(outputs: list[Any], key: int) -> list[list[float]]:
    """Per output, the keyed block sums a trial commits (its fine signed sums, gathered into blocks)."""
    return [_coarse(f[:, 0], t.numel()) for f, t in zip(fine(outputs, key), outputs, strict=True)]


def bounds(outputs: list[Any], atol_rtol: list[tuple[float, float]]) -> list[list[float]]:
    """Per reference output, Σ (atol + rtol·|ref|) per block (infinite where the reference is not finite)."""
    return [_coarse(b, t.numel()) for b, t in zip(fine_bounds(outputs, atol_rtol), outputs, strict=True)]


def mismatch(candidate: list[list[float]], reference: list[list[float]], bound: list[list[float]]) -> str | None:
    """None if every block sum is within its bound; else which output and block is not."""
    if len(candidate) != len(reference) or any(len(c) != len(r) for c, r in zip(candidate, reference, strict=False)):
        return "its committed checksums do not have the reference's shape"
    for i, (cs, rs, bs) in enumerate(zip(candidate, reference, bound, strict=True)):
        for b, (c, r, limit) in enumerate(zip(cs, rs, bs, strict=True)):
            if math.isinf(limit):
                continue
            slack = limit + 1e-6 * (abs(r) + 1.0)  # rounding of the float32 block sums themselves
            if not (isinstance(c, float | int) and abs(c - r) <= slack):
                off = abs(c - r) if isinstance(c, float | int) else c
                return f"output {i}, block {b}: checksum off by {off!r:.6} (bound {limit:.3g})"
    return None


def fine_mismatch(candidate: Any, reference: Any, bound: Any) -> str | None:
    """None if both sums of every block are within its bound (CPU tensors from tensorfile)."""
    if candidate.shape != reference.shape or bound.shape[:1] != reference.shape[:1]:
        return "its fine sums do not have the reference's shape"
    slack = bound.unsqueeze(1) + 1e-6 * (reference.abs() + 1.0)
    judged = bound.isfinite().unsqueeze(1)
    off = (((candidate - reference).abs() > slack) | candidate.isnan()) & judged
    if not bool(off.any()):
        return None
    block = int(off.any(dim=1).nonzero()[0])
    return (f"elements {block * FINE_BLOCK}-{(block + 1) * FINE_BLOCK - 1}: sums off by "
            f"{(candidate[block] - reference[block]).abs().max().item():.3g} (bound {bound[block].item():.3g})")
