"""What the candidate's process keeps of a forward, and how it tells whether that changed: copies taken at
return, bit-for-bit comparison, inputs refilled in place, and calibration's forward that computes nothing."""

from __future__ import annotations

from functools import cache
from typing import Any


def noop_module(outputs: list[Any], fresh: bool) -> Any:
    """Calibration's forward: a module called like ModelNew (through nn.Module's call, under the armed guard,
    then inspected) that computes nothing and returns ``outputs``, or (``fresh``: the cpu backend) fresh zeroed
    tensors like them. Fresh and written, as a forward's own outputs are: on the host, freeing them (when the
    next forward replaces them) is the protocol's, and a no-op that handed back the same tensors left that out
    of the protocol's CPU time, so an honest small kernel's trial read 0.3 ms of CPU above its claim plus the
    no-op's, and that excess replaced its claim (relu's cpu speedup ranged 2x over 3 quiet runs). The zeroing
    is counted as protocol: a claim can then understate a forward by at most the cost of writing its outputs
    once (pairing.CandidateCpu). GPU backends keep the same tensors: their allocator's frees cost nothing, and
    a memset of KernelBench-size outputs would loosen the wall check by milliseconds."""
    return _noop_class()(outputs, fresh)


@cache
def _noop_class() -> type:
    """One class for every no-op: a class made per call sits in a reference cycle with its closure, so each
    no-op's output-sized tensors lived until the next full garbage collection (on the cpu backend, the 10
    calibration trials held 10 outputs at once)."""
    import torch

    class Noop(torch.nn.Module):
        def __init__(self, outputs: list[Any], fresh: bool) -> None:
            super().__init__()
            self.outputs, self.fresh = outputs, fresh

        def forward(self, *args: Any) -> list[Any]:
            return [torch.zeros_like(o) for o in self.outputs] if self.fresh else self.outputs

    return Noop


def kept_copy(out: Any) -> Any:
    """A plain tensor's copy; anything else as it is (a subclass's clone would run its code here, unguarded:
    the inspection judges it)."""
    import torch

    return out.clone() if type(out) is torch.Tensor else out


def same_bits(a: Any, b: Any) -> bool:
    """Bit for bit (NaN included: a NaN left in place is not a change)."""
    import torch

    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape or a.dtype != b.dtype:
        return a is b
    if a.is_complex():
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def refilled(old: list[Any], new: list[Any]) -> list[Any]:
    """``old``'s tensors holding ``new``'s values, written through ``.data`` (the version counter does not
    move); an argument that cannot hold them (not a plain tensor, another shape) is replaced."""
    import torch

    kept = []
    for o, n in zip(old, new, strict=True):
        fits = (type(o) is torch.Tensor and type(n) is torch.Tensor and o.shape == n.shape and o.dtype == n.dtype
                and o.device == n.device)
        if fits:
            o.data.copy_(n)
        kept.append(o if fits else n)
    return kept
