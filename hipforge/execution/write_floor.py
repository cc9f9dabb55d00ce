"""The least time a forward can take on a GPU: its outputs must reach device memory, and no memory takes them
faster than its datasheet bandwidth. A reported time below that is physically impossible, whatever the clocks
say; this bounds lies about large tasks, where one forward per timed trial leaves the parent's wall clock a
slack of a tenth of the protocol's own cost (about 1 ms at KernelBench sizes)."""

from __future__ import annotations

from typing import Any

from hipforge.execution.profile.peaks import DATASHEET, LAST_LEVEL_CACHE_MB, datasheet_part


def written_bytes(outputs: list[Any]) -> int:
    """The bytes a forward's outputs occupy, each storage once and at most its size: an expanded view writes
    only what it repeats, and an output returned twice is written once (the candidate's may do the same)."""
    views: dict[int, list[Any]] = {}
    for o in outputs:
        if hasattr(o, "untyped_storage"):
            views.setdefault(o.untyped_storage().data_ptr(), []).append(o)
    return sum(min(group[0].untyped_storage().nbytes(), sum(o.numel() * o.element_size() for o in group))
               for group in views.values())


def least_forward_ms(out_bytes: int, device: str) -> float:
    """Writing ``out_bytes`` to device memory, less what the last cache level can hold back, at the fastest
    bandwidth the part's datasheet allows (0 for a device not in the table: no bound)."""
    part = datasheet_part(device)
    if part is None:
        return 0.0
    beyond_cache = out_bytes - LAST_LEVEL_CACHE_MB[part] * 2**20
    return max(beyond_cache, 0.0) / DATASHEET[part][0] * 1e3


def below_floor(reported_ms: float, out_bytes: int, device: str) -> str | None:
    """Why ``reported_ms`` per forward cannot be true on ``device``, if it cannot."""
    floor = least_forward_ms(out_bytes, device)
    if floor <= 0 or reported_ms >= floor:
        return None
    return (f"reports {reported_ms:.4g} ms per forward, but writing its {out_bytes / 2**20:.0f} MB of outputs to "
            f"device memory takes at least {floor:.4g} ms on {device} at its datasheet bandwidth")
