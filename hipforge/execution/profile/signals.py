"""The signals every profiling path produces, and the bottleneck label derived from them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hipforge.execution.profile.peaks import Peaks

MARKER = "hipforge-forward"  # the range around the profiled forward (target.py)
LOW_COVERAGE = 0.3  # below this share of forward time in our kernels the candidate is mostly ATen
LAUNCH_BOUND_SHARE = 0.1  # neither roof reached to a tenth ...
LAUNCH_BOUND_US = 10.0  # ... by kernels this short: launch latency, not the memory or the ALUs, limits them
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_GLOBAL = re.compile(r"__global__([^(;{]*)\(")  # the declarator up to the parameter list; its last word is the name


@dataclass
class KernelSample:
    """One profiled kernel launch."""

    name: str
    custom: bool  # one of the candidate's own __global__ functions (else ATen, cuBLAS, cuDNN, ...)
    duration_ns: float
    dram_bytes: float | None = None
    flops: float | None = None  # fp32 FLOPs counted from executed instructions
    dram_pct: float | None = None  # DRAM throughput, % of the profiler's own peak
    sm_pct: float | None = None  # compute (SM) throughput, % of peak
    occupancy_pct: float | None = None  # achieved occupancy
    stall: str | None = None  # the largest warp stall reason


@dataclass
class Profile:
    """A candidate's forward pass, summarized; ``source`` names the tool or says it is an estimate."""

    source: str  # "ncu" | "rocprofv3" | "estimate: ..."
    coverage: float | None  # share of forward time spent in the candidate's own kernels
    bandwidth_share: float | None  # achieved DRAM bandwidth / the device's peak
    flop_share: float | None  # achieved FLOP rate / the device's peak
    occupancy_pct: float | None = None
    stall: str | None = None
    time_ms: float | None = None  # the forward's kernel time (profiled) or measured runtime (estimate)
    bottleneck: str = ""  # memory-bound | compute-bound | launch-bound | low-coverage
    peaks_source: str = ""
    kernels: list[KernelSample] = field(default_factory=list)

    @property
    def estimate(self) -> bool:
        return self.source.startswith("estimate")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for logs and prompts."""
        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.0f}%"

        occupancy = "" if self.occupancy_pct is None else f", occupancy {self.occupancy_pct:.0f}%"
        stall = f", top stall {self.stall}" if self.stall else ""
        return (f"{self.bottleneck or 'unclassified'} ({self.source}): coverage {pct(self.coverage)}, "
                f"bandwidth {pct(self.bandwidth_share)} of peak, FLOP rate {pct(self.flop_share)} of peak"
                f"{occupancy}{stall}")


def custom_kernel_names(candidate_source: str) -> set[str]:
    """Names of the __global__ functions a candidate defines: profiled kernels with these names are ours."""
    heads = _GLOBAL.findall(_LAUNCH_BOUNDS.sub(" ", candidate_source))
    return {words[-1] for head in heads if (words := re.findall(r"\w+", head))}


def bottleneck(coverage: float | None, bandwidth_share: float | None, flop_share: float | None,
               mean_kernel_us: float | None) -> str:
    """The first thing to fix: too little in our kernels, launch latency, the memory roof or the compute roof."""
    if coverage is not None and coverage < LOW_COVERAGE:
        return "low-coverage"
    b, f = bandwidth_share or 0.0, flop_share or 0.0
    if max(b, f) < LAUNCH_BOUND_SHARE and mean_kernel_us is not None and mean_kernel_us < LAUNCH_BOUND_US:
        return "launch-bound"
    return "memory-bound" if b >= f else "compute-bound"


def summarize(kernels: Sequence[KernelSample], peaks: Peaks, source: str) -> Profile:
    """Time-weighted summary of one forward's kernels: coverage, roofline position, occupancy, top stall."""
    if not kernels:
        raise ValueError(f"{source}: no kernel was profiled (did the forward run on the GPU?)")
    total_ns = sum(k.duration_ns for k in kernels)
    if total_ns <= 0:
        raise ValueError(f"{source}: profiled kernels report no duration")
    seconds = total_ns * 1e-9
    coverage = sum(k.duration_ns for k in kernels if k.custom) / total_ns
    moved = _total(k.dram_bytes for k in kernels)
    flops = _total(k.flops for k in kernels)
    bandwidth = None if moved is None else moved / seconds / peaks.bandwidth
    flop_share = None if flops is None else flops / seconds / peaks.flops
    occupancy = _weighted(kernels, "occupancy_pct")
    stalls: dict[str, float] = {}
    for k in kernels:
        if k.stall:
            stalls[k.stall] = stalls.get(k.stall, 0.0) + k.duration_ns
    label = bottleneck(coverage, bandwidth, flop_share, total_ns / len(kernels) / 1e3)
    return Profile(source, coverage, bandwidth, flop_share, occupancy, max(stalls, key=stalls.get) if stalls else None,
                   seconds * 1e3, label, peaks.source, list(kernels))


def _total(values: Any) -> float | None:
    values = list(values)
    return None if any(v is None for v in values) else float(sum(values))


def _weighted(kernels: Sequence[KernelSample], attr: str) -> float | None:
    pairs = [(getattr(k, attr), k.duration_ns) for k in kernels if getattr(k, attr) is not None]
    weight = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / weight if weight else None
