"""Achieved memory bandwidth of memory-bound kernels, as a share of a device-to-device copy measured in the
same run (the roof a pure elementwise kernel can reach: it reads its inputs and writes its outputs once)."""

from __future__ import annotations

from collections.abc import Iterable

from hipforge.execution.profile.peaks import measure
from hipforge.tasks.reference_check import work_profile


def bandwidth_shares(kernels: Iterable[tuple[str, str, float]], device: str = "cuda") -> dict[str, dict[str, float]]:
    """(name, full-size task source, measured runtime in ms) -> the least bytes the task moves, the achieved
    bytes per second and its share of this device's copy bandwidth, measured now, beside the kernels."""
    copy = measure(device).bandwidth
    shares = {}
    for name, source, runtime_ms in kernels:
        moved = work_profile(source).get("bytes")
        if not moved or not runtime_ms:
            continue  # no meta-device profile (data-dependent ops) or no timing
        achieved = moved / (runtime_ms / 1e3)
        shares[name] = {"bytes": moved, "bytes_per_s": achieved, "copy_bytes_per_s": copy, "share": achieved / copy}
    return shares
