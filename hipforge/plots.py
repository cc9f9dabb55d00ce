"""Plots people would rather look at than read, as PNG bytes that Dagster metadata can embed."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any


def new_figure(width: float, height: float) -> tuple[Any, Any]:
    """A matplotlib (figure, axes) on the Agg backend: no display on servers and CI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def to_png(fig: Any) -> bytes:
    """Lay the figure out, render it to PNG bytes and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


CPU_SPEEDUP_CAVEAT = "cpu-backend speedups are fiber-emulated rankings, not GPU times"


def device_name(backend: str, arch: str) -> str:
    """The device a backend measures on: the GPU's arch, or the host CPU that the cpu backend emulates it on."""
    return "host CPU" if backend == "cpu" else arch


def measured_on(backend: str, device: str = "", protocol: str = "", speedups: bool = False) -> str:
    """The line under a plot's title that says what it measured on: backend, device and protocol; when the
    plot shows times or speedups of the cpu backend, that they are fiber-emulated rankings."""
    line = f"{backend} backend" + (f", {device}" if device else "") + (f" ({protocol})" if protocol else "")
    return f"{line}\n{CPU_SPEEDUP_CAVEAT}" if speedups and backend == "cpu" else line


def speedup_bars(labels: Sequence[str], speedups: Sequence[float], title: str, backend: str) -> bytes:
    """Horizontal bars of speedup over eager per task, fastest first, with the 1x line; log scale. The backend
    is on the axis, and a cpu backend's bars say that they rank kernels, nothing more."""
    order = sorted(range(len(labels)), key=lambda i: -speedups[i])
    labels, speedups = [labels[i] for i in order], [speedups[i] for i in order]
    fig, ax = new_figure(8, max(2.5, 0.28 * len(labels) + 1.2))
    colors = ["#2a9d8f" if s >= 1 else "#e76f51" for s in speedups]
    ax.barh(labels, speedups, color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(f"speedup over PyTorch eager on the {backend} backend (log scale)")
    ax.set_title(f"{title}\n({CPU_SPEEDUP_CAVEAT})" if backend == "cpu" else title)
    ax.invert_yaxis()
    return to_png(fig)


def markdown_image(png: bytes, alt: str) -> str:
    """Markdown that shows the PNG inline (Dagster renders metadata markdown on the asset page)."""
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"
