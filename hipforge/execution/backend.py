"""The contract every execution backend fulfils.

A candidate is a KernelBench-format module that calls
``torch.utils.cpp_extension.load_inline``. The sandbox replaces that function with
``Backend.load_inline`` before the candidate is imported, so the candidate's own
source is never edited and its ``CXX=hipcc`` never decides which compiler runs.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Protocol


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
