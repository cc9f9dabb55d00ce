"""rocprofv3 on ROCm: kernel trace of one forward, written against rocprofv3's documented CSV output.

``rocprofv3 --kernel-trace --marker-trace --stats --output-format csv -d DIR -o NAME -- python -m ...target``
writes ``NAME_kernel_trace.csv`` (one row per dispatch: Kernel_Name, Start_Timestamp, End_Timestamp in ns,
...), ``NAME_marker_api_trace.csv`` (roctx ranges) and ``NAME_kernel_stats.csv`` (Name, Calls,
TotalDurationNs, ...). The target brackets its profiled forward with a ``hipforge-forward`` roctx range
and a device sync, so the kernels inside that range's timestamps are the forward's. Kernel traces carry
no hardware counters: coverage, durations and a bottleneck from the task's bytes; no occupancy or stalls.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from hipforge.execution.profile.ncu import base_name
from hipforge.execution.profile.signals import MARKER, KernelSample


def command(target: Sequence[str], out_dir: str, name: str = "hipforge") -> list[str]:
    return ["rocprofv3", "--kernel-trace", "--marker-trace", "--stats", "--output-format", "csv",
            "-d", out_dir, "-o", name, "--", *target]


def find(out_dir: str | Path, suffix: str) -> Path:
    """rocprofv3 nests its files (``%hostname%/%pid%`` by default): the one ending in ``suffix``."""
    found = sorted(Path(out_dir).rglob(f"*{suffix}"))
    if not found:
        raise FileNotFoundError(f"rocprofv3 wrote no *{suffix} under {out_dir}")
    return found[-1]


def marker_window(text: str, marker: str = MARKER) -> tuple[int, int]:
    """(start, end) in ns of the roctx range named ``marker``."""
    for row in csv.DictReader(io.StringIO(text)):
        if marker in (row.get("Function"), row.get("Message"), row.get("Marker_Name")):
            return int(row["Start_Timestamp"]), int(row["End_Timestamp"])
    raise ValueError(f"no roctx range {marker!r} in the marker trace")


def parse_trace(text: str, custom_names: set[str], window: tuple[int, int] | None = None) -> list[KernelSample]:
    """Kernels of the kernel-trace CSV, those inside ``window`` only when given."""
    kernels = []
    for row in csv.DictReader(io.StringIO(text)):
        try:
            start, end, name = int(row["Start_Timestamp"]), int(row["End_Timestamp"]), row["Kernel_Name"]
        except KeyError as e:
            raise ValueError(f"rocprofv3 kernel trace lacks column {e}") from None
        if window is None or window[0] <= start and end <= window[1]:
            kernels.append(KernelSample(name, base_name(name) in custom_names, float(end - start)))
    return kernels


def parse_stats(text: str) -> dict[str, float]:
    """Kernel name -> total ns over the whole run, from the stats CSV (warm-ups included)."""
    return {row["Name"]: float(row["TotalDurationNs"]) for row in csv.DictReader(io.StringIO(text))}
