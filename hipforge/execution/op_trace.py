"""Which PyTorch operations a forward runs, as ATen sees them (a TorchDispatchMode, below autograd's
decompositions, so F.linear and an addmm written by hand read the same).

A decoy kernel beside PyTorch (the result computed by torch, then copied or scaled by one in a HIP kernel)
passes the NaN probe: the output does depend on the kernel. What gives it away is that ATen, inside ModelNew's
forward, runs every compute operation the reference runs. The candidate's trace is taken in its own process,
so it can only incriminate: a candidate that hides its ATen calls loses nothing it was owed.

An operation is keyed by its name (in-place and out-of-place alike) and which of its arguments are tensors
and which are None, so a convolution whose bias the kernel adds is not the reference's convolution with bias.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

# ATen operations that move, make or describe memory rather than compute the result
NON_COMPUTE = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor", "arange", "copy", "clone",
    "_to_copy", "detach", "lift_fresh", "lift_fresh_copy", "alias", "resize", "set", "fill", "zero",
    "_local_scalar_dense", "_copy_from", "_copy_from_and_resize", "is_nonzero", "equal", "record_stream",
})


def op_key(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The operation's key, or None where it computes nothing (a view, an allocation, a copy)."""
    import torch

    name = func._overloadpacket.__name__.rstrip("_")
    returns = func._schema.returns
    is_view = bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write
    if is_view or name in NON_COMPUTE:
        return None
    flat = [*args, *kwargs.values()]
    pattern = "".join("T" if isinstance(a, torch.Tensor) else "N" if a is None else "" for a in flat)
    return f"{name}({pattern})"


def trace(fn: Any, *args: Any) -> Counter[str]:
    """The compute operations ``fn(*args)`` runs, counted."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: Counter[str] = Counter()

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            kwargs = kwargs or {}
            if (key := op_key(func, args, kwargs)) is not None:
                seen[key] += 1
            return func(*args, **kwargs)

    with torch.no_grad(), Recorder():
        fn(*args)
    return seen


def warm() -> None:
    """Enter the trace once before torch's functions are snapshot for the patch check: its first use imports
    torch._dynamo, which wraps torch.manual_seed."""
    import torch

    trace(torch.neg, torch.zeros(1))


def all_in_aten(reference: Counter[str], candidate: Counter[str]) -> bool:
    """True when the candidate's forward runs, through ATen, every compute operation the reference runs (as
    many times): whatever its own kernels do, PyTorch has computed the result beside them."""
    return bool(reference) and not (reference - candidate)


def describe(reference: Counter[str]) -> str:
    names = sorted({key.split("(")[0] for key in reference})
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
