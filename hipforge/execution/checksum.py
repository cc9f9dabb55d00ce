"""Keyed block checksums of a trial's outputs: what the candidate commits right after its forward, before
it can know whether the trial's outputs will be shipped whole.

Per block of an output, the sum of its elements times ±1 weights drawn from the key (in float64). The
reference's process computes the same sums for its own output, and a bound: the largest difference two
outputs within the tolerance can have, Σ (atol + rtol·|ref|) over the block. A wrong output (a stale
cache, a result from other inputs) differs by about √n·error per block, far above the bound; an honest
one is within it by construction, so no honest kernel is ever lost to a checksum. The adjoint of a linear
op costs what the op costs, so no output can be checksummed for less than computing it.
"""

from __future__ import annotations

from typing import Any

CHUNK = 1 << 22  # elements whose weights are drawn at once
MIN_BLOCK, MAX_BLOCKS = 1 << 16, 1024
# Outputs larger than EvalConfig.whole_output_limit are not shipped whole (6 GB outputs would cost minutes per
# trial through host memory): a full check compares their fine sums instead, signed and plain over blocks of
# FINE_BLOCK, each within its own bound. That catches any error above the block's sum of tolerances, and any
# bias (a downgrade's) in the plain sums; an error on one element smaller than that it can miss.
FINE_BLOCK = 256


def block_size(numel: int) -> int:
    """A power of two between MIN_BLOCK and CHUNK: at most about MAX_BLOCKS sums per output."""
    size = MIN_BLOCK
    while size < CHUNK and size * MAX_BLOCKS < numel:
        size *= 2
    return size


def _weighted_chunks(t: Any, key: int) -> Any:
    """(float64 chunk, ±1 float64 weights) over the flattened tensor."""
    import torch

    flat = t.detach().reshape(-1)
    for start in range(0, flat.numel(), CHUNK):
        part = flat[start:start + CHUNK].double()
        gen = torch.Generator(device=part.device).manual_seed((key + start // CHUNK * 7919) % (1 << 62))
        signs = torch.randint(0, 2, (part.numel(),), generator=gen, device=part.device, dtype=torch.int8)
        yield part, signs.double() * 2 - 1


def _per_block(values: Any, block: int, out: list[float]) -> None:
    """Sums of consecutive blocks of one chunk (a block never straddles chunks: it divides CHUNK)."""
    import torch

    index = torch.arange(values.numel(), device=values.device) // block
    sums = torch.zeros(int(index[-1].item()) + 1, dtype=torch.float64, device=values.device)
    sums.index_add_(0, index, values)
    out.extend(sums.tolist())


def whole(numel: int, limit: int) -> bool:
    """Is an output of ``numel`` elements shipped whole for a full check (else as fine sums)?"""
    return numel <= limit


def sums(outputs: list[Any], key: int) -> list[list[float]]:
    """Per output, the keyed block sums."""
    result = []
    for i, t in enumerate(outputs):
        block, got = block_size(t.numel()), []
        for part, w in _weighted_chunks(t, key + i):
            _per_block(part * w, block, got)
        result.append(got)
    return result


def fine(outputs: list[Any], key: int) -> list[Any]:
    """Per output, a float64 tensor (blocks, 2): signed and plain sums over blocks of FINE_BLOCK, on its device."""
    import torch

    result = []
    for i, t in enumerate(outputs):
        parts = [torch.stack([_blocks(part * w), _blocks(part)], dim=1) for part, w in _weighted_chunks(t, key + i)]
        result.append(torch.cat(parts) if parts else torch.zeros(0, 2, dtype=torch.float64))
    return result


def fine_bounds(outputs: list[Any], atol_rtol: list[tuple[float, float]]) -> list[Any]:
    """Per reference output, Σ (atol + rtol·|ref|) over each FINE_BLOCK block (inf where it is not finite)."""
    import torch

    result = []
    for t, (atol, rtol) in zip(outputs, atol_rtol, strict=True):
        flat = t.detach().reshape(-1)
        parts = []
        for start in range(0, flat.numel(), CHUNK):
            part = flat[start:start + CHUNK].double()
            parts.append(_blocks(torch.where(part.isfinite(), atol + rtol * part.abs(), torch.full_like(part, torch.inf))))
        result.append(torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64))
    return result


def fine_mismatch(candidate: Any, reference: Any, bound: Any) -> str | None:
    """None if both sums of every block are within its bound (CPU tensors from tensorfile)."""
    if candidate.shape != reference.shape:
        return "its fine sums do not have the reference's shape"
    slack = bound.unsqueeze(1) + 1e-9 * (reference.abs() + 1.0)
    judged = bound.isfinite().unsqueeze(1)
    off = (((candidate - reference).abs() > slack) | candidate.isnan()) & judged
    if not bool(off.any()):
        return None
    block = int(off.any(dim=1).nonzero()[0])
    return (f"elements {block * FINE_BLOCK}-{(block + 1) * FINE_BLOCK - 1}: sums off by "
            f"{(candidate[block] - reference[block]).abs().max().item():.3g} (bound {bound[block].item():.3g})")


def _blocks(values: Any) -> Any:
    """Sums of consecutive FINE_BLOCK elements of one chunk (the last block may be short)."""
    import torch

    pad = -values.numel() % FINE_BLOCK
    return torch.nn.functional.pad(values, (0, pad)).view(-1, FINE_BLOCK).sum(dim=1)


def bounds(outputs: list[Any], atol_rtol: list[tuple[float, float]]) -> list[list[float]]:
    """Per reference output, Σ (atol + rtol·|ref|) per block (infinite where the reference is not finite)."""
    import torch

    result = []
    for t, (atol, rtol) in zip(outputs, atol_rtol, strict=True):
        block, got = block_size(t.numel()), []
        flat = t.detach().reshape(-1)
        for start in range(0, flat.numel(), CHUNK):
            part = flat[start:start + CHUNK].double()
            tol = torch.where(part.isfinite(), atol + rtol * part.abs(), torch.full_like(part, float("inf")))
            _per_block(tol, block, got)
        result.append(got)
    return result


def mismatch(candidate: list[list[float]], reference: list[list[float]], bound: list[list[float]]) -> str | None:
    """None if every block sum is within its bound; else which output and block is not."""
    import math

    if len(candidate) != len(reference) or any(len(c) != len(r) for c, r in zip(candidate, reference, strict=False)):
        return "its committed checksums do not have the reference's shape"
    for i, (cs, rs, bs) in enumerate(zip(candidate, reference, bound, strict=True)):
        for b, (c, r, limit) in enumerate(zip(cs, rs, bs, strict=True)):
            if math.isinf(limit):
                continue
            slack = limit + 1e-9 * (abs(r) + 1.0)  # float64 rounding of the sums themselves
            if not (isinstance(c, float | int) and abs(c - r) <= slack):
                return f"output {i}, block {b}: checksum off by {abs(c - r) if isinstance(c, float | int) else c!r} (bound {limit:.3g})"
    return None
