"""The contract every execution backend fulfils.

A candidate is a KernelBench-format module that calls
``torch.utils.cpp_extension.load_inline``. The sandbox replaces that function with
``Backend.load_inline`` before the candidate is imported, so the candidate's own
source is never edited and its ``CXX=hipcc`` never decides which compiler runs.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any, Protocol


class CompileError(RuntimeError):
    """The toolchain rejected a candidate; ``log`` holds the compiler output."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


class Backend(Protocol):
    name: str  # "cpu" | "cuda" | "rocm"
    torch_device: str  # where task tensors live: "cpu" or "cuda"

    def load_inline(
        self,
        name: str,
        cpp_sources: str | Sequence[str],
        cuda_sources: str | Sequence[str] | None = None,
        functions: str | Sequence[str] | None = None,
        **kwargs: object,
    ) -> types.ModuleType:
        """Build the HIP sources for this backend and return the Python extension module.

        Accepts torch's ``load_inline`` arguments; raises CompileError with the log.
        """
        ...


def make_backend(cfg: Any) -> Any:
    """The backend an EvalConfig names: cpu, cuda, rocm, or "package.module:factory" (called with the config)."""
    import importlib

    if ":" in cfg.backend:
        module, _, attr = cfg.backend.partition(":")
        return getattr(importlib.import_module(module), attr)(cfg)
    if cfg.backend == "cpu":
        from hipforge.execution.cpu.backend import CpuBackend

        return CpuBackend(wavefront=cfg.wavefront)
    if cfg.backend == "cuda":
        from hipforge.execution.cuda.backend import CudaBackend

        return CudaBackend(arch=cfg.arch) if cfg.arch.startswith("sm_") else CudaBackend()
    if cfg.backend == "rocm":
        from hipforge.execution.rocm.backend import RocmBackend

        return RocmBackend(arch=cfg.arch)
    raise ValueError(f"unknown backend {cfg.backend!r}")
