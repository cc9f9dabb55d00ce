"""The signals without a profiler: the task's FLOPs and bytes over the measured runtime, against the peaks.

Bytes are the least the task must move (inputs, parameters, outputs), so the bandwidth share is a lower
bound; FLOPs are the reference's (torch's FLOP counter: matmuls and convolutions, not elementwise ops).
Everything is labelled an estimate.
"""

from __future__ import annotations

from hipforge.execution.profile.peaks import Peaks
from hipforge.execution.profile.signals import Profile, bottleneck

SOURCE = "estimate: task FLOPs and bytes / measured runtime"


def estimate(flops: float | None, bytes_moved: float | None, runtime_ms: float | None, peaks: Peaks,
             coverage: float | None = None, launches: int | None = None) -> Profile:
    """``coverage`` (work.py's estimate) and ``launches`` (kernels per forward) are optional; without a
    runtime only the coverage is known."""
    if runtime_ms is not None and runtime_ms <= 0:
        raise ValueError(f"runtime must be positive, got {runtime_ms} ms")
    seconds = None if runtime_ms is None else runtime_ms * 1e-3
    bandwidth = None if bytes_moved is None or seconds is None else bytes_moved / seconds / peaks.bandwidth
    flop_share = None if flops is None or seconds is None else flops / seconds / peaks.flops
    mean_us = runtime_ms * 1e3 / launches if launches and runtime_ms else None
    return Profile(SOURCE, coverage, bandwidth, flop_share, time_ms=runtime_ms,
                   bottleneck=bottleneck(coverage, bandwidth, flop_share, mean_us), peaks_source=peaks.source)
