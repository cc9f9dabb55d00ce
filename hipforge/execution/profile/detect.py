"""Which profiler, if any, can measure candidates of a backend on this machine."""

from __future__ import annotations

import shutil

PROFILERS = {"cuda": "ncu", "rocm": "rocprofv3"}


def profiler_for(backend: str) -> str | None:
    """``ncu`` for the cuda backend, ``rocprofv3`` for rocm, when on PATH; None: estimate instead."""
    tool = PROFILERS.get(backend)
    return tool if tool and shutil.which(tool) else None
