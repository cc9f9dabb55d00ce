"""Device peaks, the roofs of the roofline: measured once per device and cached, datasheet values as fallback.

Bandwidth is measured with a device-to-device copy (bytes read + written per second), the FLOP rate with
a large fp32 matmul with TF32 off (our tasks are fp32 and KernelBench checks them at fp32 tolerances).
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from hipforge.execution.config import default_cache_dir


@dataclass(frozen=True)
class Peaks:
    device: str
    bandwidth: float  # bytes per second
    flops: float  # fp32 FLOP per second
    source: str  # "measured" | "datasheet: <part>"

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP per byte) where the memory roof meets the compute roof."""
        return self.flops / self.bandwidth


# fp32 non-tensor (vector) peaks, dense, from the vendors' datasheets
DATASHEET: dict[str, tuple[float, float]] = {
    "MI350X": (8.0e12, 144.2e12),
    "MI300X": (5.3e12, 81.7e12),
    "H200": (4.8e12, 67.0e12),
    "H100": (3.35e12, 67.0e12),  # SXM; the PCIe part is slower, so its bounds taken from here only loosen
}
# the last cache level before device memory (AMD's Infinity Cache, NVIDIA's L2), MB: writes it can absorb
LAST_LEVEL_CACHE_MB: dict[str, float] = {"MI350X": 256.0, "MI300X": 256.0, "H200": 60.0, "H100": 60.0}


def datasheet_part(device: str) -> str | None:
    """The table's part whose name the device's contains ("NVIDIA H200" -> "H200"), if any."""
    return next((part for part in DATASHEET if part.lower() in device.lower()), None)


def datasheet(device: str) -> Peaks:
    """The table's values for a device whose name contains one of its parts ("NVIDIA H200", "MI300X", ...)."""
    part = datasheet_part(device)
    if part is None:
        raise KeyError(f"no datasheet peaks for {device!r}; known: {', '.join(DATASHEET)}")
    bandwidth, flops = DATASHEET[part]
    return Peaks(device, bandwidth, flops, f"datasheet: {part}")


def device_name(device: str) -> str:
    import torch

    if device == "cpu":
        return f"cpu:{platform.machine()}:{os.cpu_count()}"
    return torch.cuda.get_device_name(torch.device(device))


def measure(device: str, copy_mb: int = 1024, matmul_n: int = 8192, repeats: int = 5) -> Peaks:
    """Best of ``repeats`` for a copy of ``copy_mb`` MB and an n x n x n fp32 matmul on ``device``."""
    import torch

    src = torch.empty(copy_mb << 18, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    copy_s = _best(lambda: dst.copy_(src), device, repeats)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        a = torch.randn(matmul_n, matmul_n, device=device)
        b = torch.randn(matmul_n, matmul_n, device=device)
        matmul_s = _best(lambda: torch.mm(a, b), device, repeats)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return Peaks(device_name(device), 2 * (copy_mb << 20) / copy_s, 2 * matmul_n**3 / matmul_s, "measured")


def device_peaks(device: str, cache_dir: str | Path | None = None, **sizes: int) -> Peaks:
    """Measured peaks of ``device`` from the cache, measuring them the first time; datasheet values if the
    measurement fails (out of memory on a busy device) and the part is known."""
    path = Path(cache_dir or default_cache_dir()) / "peaks.json"
    name = device_name(device)
    cached = json.loads(path.read_text()) if path.exists() else {}
    if name in cached:
        return Peaks(**cached[name])
    try:
        peaks = measure(device, **sizes)
    except RuntimeError:
        return datasheet(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    cached[name] = asdict(peaks)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # concurrent writers: the last rename wins, none is torn
    tmp.write_text(json.dumps(cached, indent=1))
    tmp.replace(path)
    return peaks


def _best(fn: Callable[[], object], device: str, repeats: int) -> float:
    import time

    import torch

    def sync() -> None:
        if device != "cpu":
            torch.cuda.synchronize(device)

    fn()  # warm-up: allocator, library handles
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best
