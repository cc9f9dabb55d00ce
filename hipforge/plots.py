"""Plots people would rather look at than read: PNG bytes that Dagster metadata can embed, and PNG files under
plots/ beside the warehouse (one folder per asset, partition and run; only the newest runs' folders are kept)."""

from __future__ import annotations

import base64
import io
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

KEEP_RUNS = 5  # plot folders kept per asset and partition: a re-materialization adds one, the oldest goes


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


def plots_root(warehouse_file: Path) -> Path:
    """Plot files live beside the warehouse, like its exports and checkpoints (git-ignored under warehouse/)."""
    return warehouse_file.parent / "plots"


def run_plot_folder(root: Path, asset: str, partition: str | None, run_id: str, keep: int = KEEP_RUNS) -> Path:
    """root/<asset>/<partition or _>/<run_id>/, created; older run folders of the same asset and partition beyond
    the newest `keep` are removed, so re-materializations do not pile plots up without bound."""
    folder = root / _safe(asset) / _safe(partition or "_") / run_id
    folder.mkdir(parents=True, exist_ok=True)
    runs = sorted((d for d in folder.parent.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime, reverse=True)
    for old in [d for d in runs if d != folder][max(keep - 1, 0):]:
        shutil.rmtree(old, ignore_errors=True)  # a concurrent run may have pruned it already
    return folder


def save_png(png: bytes, folder: Path, name: str) -> Path:
    path = folder / f"{_safe(name)}.png"
    path.write_bytes(png)
    return path


def _safe(part: str) -> str:
    """A folder or file name from a partition key or metadata label (checkpoint:<id>, 'roofline L1')."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", part).strip("_") or "_"
