"""Roofline plots: each task a point (arithmetic intensity, achieved FLOP rate) under the device's roofs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hipforge.execution.profile.peaks import Peaks
from hipforge.execution.profile.signals import Profile
from hipforge.plots import new_figure, to_png


@dataclass(frozen=True)
class RooflinePoint:
    label: str
    level: str  # KernelBench level ("1", "2", "3") or any grouping; one plot per level
    flops: float  # the task's FLOPs per forward
    bytes_moved: float  # the least bytes it must move
    runtime_ms: float  # the candidate's measured median
    estimate: bool = True  # position from task FLOPs/bytes and runtime (not hardware counters)

    @classmethod
    def from_profile(cls, label: str, level: str, profile: Profile) -> RooflinePoint | None:
        """The measured point of a profiled forward (FLOPs and DRAM bytes from counters); None when a
        kernel lacks them (a kernel trace has no counters)."""
        kernels = profile.kernels
        if not kernels or any(k.flops is None or k.dram_bytes is None for k in kernels) or not profile.time_ms:
            return None
        return cls(label, level, sum(k.flops or 0.0 for k in kernels), sum(k.dram_bytes or 0.0 for k in kernels),
                   profile.time_ms, estimate=False)

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes_moved

    @property
    def flop_rate(self) -> float:
        return self.flops / (self.runtime_ms * 1e-3)


def roofline_plot(points: Sequence[RooflinePoint], peaks: Peaks, title: str) -> bytes:
    """One log-log roofline: memory roof up to the ridge, compute roof after it, the points under them."""
    usable = [p for p in points if p.flops > 0 and p.bytes_moved > 0 and p.runtime_ms > 0]
    if not usable:
        raise ValueError(f"{title}: no point with positive FLOPs, bytes and runtime to plot")
    fig, ax = new_figure(7, 4.5)
    low = min(min(p.intensity for p in usable), peaks.ridge) / 4
    high = max(max(p.intensity for p in usable), peaks.ridge) * 4
    xs = [low, peaks.ridge, high]
    ax.plot(xs, [min(peaks.flops, x * peaks.bandwidth) for x in xs], color="black", linewidth=1.2,
            label=f"roofs: {peaks.bandwidth / 1e12:.2f} TB/s, {peaks.flops / 1e12:.1f} TFLOP/s ({peaks.source})")
    for estimated, marker in ((False, "o"), (True, "^")):
        mine = [p for p in usable if p.estimate == estimated]
        if mine:
            ax.scatter([p.intensity for p in mine], [p.flop_rate for p in mine], marker=marker, zorder=3,
                       label="measured" if not estimated else "estimate (task FLOPs, bytes / runtime)")
    for p in usable:
        ax.annotate(p.label, (p.intensity, p.flop_rate), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(title, **({"fontsize": 9} if "\n" in title else {}))  # a subtitle: two lines fit
    ax.legend(fontsize=7, loc="lower right")
    return to_png(fig)


def roofline_by_level(points: Sequence[RooflinePoint], peaks: Peaks, title: str = "roofline",
                      subtitle: str = "") -> dict[str, bytes]:
    """One PNG per level, keyed by level. Tasks without FLOPs (torch's counter counts matmuls and convolutions,
    not elementwise ops) have no place on a FLOP roofline: the title says how many were left out. `subtitle`
    goes under the title (what the times were measured on)."""
    plots = {}
    for level in sorted({p.level for p in points}):
        everyone = [p for p in points if p.level == level]
        mine = [p for p in everyone if p.flops > 0 and p.bytes_moved > 0 and p.runtime_ms > 0]
        if mine:
            left_out = f" ({len(everyone) - len(mine)} without FLOPs left out)" if len(mine) < len(everyone) else ""
            plots[level] = roofline_plot(mine, peaks, f"{title}, level {level}{left_out}"
                                         + (f"\n{subtitle}" if subtitle else ""))
    return plots
