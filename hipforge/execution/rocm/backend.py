"""The rocm backend: the real target (MI350X, gfx950; MI300X, gfx942). A ROCm build of torch and
hipcc compile the candidate exactly as KernelBench's HIP path does (torch's load_inline, sources as
the candidate gave them), except that hipforge, not the candidate, picks the compiler: hipcc by full
path from config with HIP_PLATFORM=amd set explicitly (Debian's hipcc 5.2 without it silently picks
nvcc), the offload arch from config. Thin by design: it cannot run on our machines.
"""

from __future__ import annotations

import os
import re
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import CompileCache, cache_key
from hipforge.execution.extension import import_extension

KNOWN_ARCHS = {"gfx950": "MI350X / MI355X", "gfx942": "MI300X / MI325X", "gfx90a": "MI210 / MI250X"}
_env_lock = threading.Lock()


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


@dataclass(frozen=True)
class RocmSettings:
    """Everything that decides how a candidate is built; pure data, testable anywhere."""

    arch: str = "gfx950"
    hipcc: str = "/opt/rocm/bin/hipcc"
    rocm_path: str = "/opt/rocm"
    opt: str = "-O3"

    def __post_init__(self) -> None:
        if not re.fullmatch(r"gfx[0-9a-f]+", self.arch):
            raise ValueError(f"not an AMD GPU arch: {self.arch!r} (e.g. gfx950, gfx942)")

    def env(self) -> dict[str, str]:
        return {
            "HIP_PLATFORM": "amd",
            "CXX": self.hipcc,
            "ROCM_PATH": self.rocm_path,
            "ROCM_HOME": self.rocm_path,
            "PYTORCH_ROCM_ARCH": self.arch,
        }

    def cflags(self, extra: Sequence[str] = ()) -> list[str]:
        """hipcc compiles the candidate's cpp_sources (kernels included) as HIP: offload arch here."""
        return [f"--offload-arch={self.arch}", self.opt, "-D__HIP_PLATFORM_AMD__=1", *extra]


def require_rocm_torch() -> None:
    import torch

    if getattr(torch.version, "hip", None) is None:
        raise CompileError(
            "the rocm backend needs a ROCm build of torch",
            f"torch {torch.__version__} has no HIP runtime (torch.version.hip is None); "
            "install torch from the "
            "ROCm wheel index on an AMD GPU machine, or use the cuda / cpu backend",
        )


class RocmBackend:
    name = "rocm"
    torch_device = "cuda"  # ROCm torch exposes AMD GPUs as torch's "cuda" device

    def __init__(
        self,
        arch: str = "gfx950",
        hipcc: str = "/opt/rocm/bin/hipcc",
        rocm_path: str = "/opt/rocm",
        cache: CompileCache | None = None,
    ) -> None:
        self.settings = RocmSettings(arch=arch, hipcc=hipcc, rocm_path=rocm_path)
        self.cache = cache or CompileCache()

    def check_toolchain(self) -> None:
        require_rocm_torch()
        if not os.access(self.settings.hipcc, os.X_OK):
            raise CompileError(
                f"hipcc not found at {self.settings.hipcc}", "set RocmBackend(hipcc=...) to its full path"
            )

    def load_inline(
        self,
        name: str,
        cpp_sources: str | Sequence[str],
        cuda_sources: str | Sequence[str] | None = None,
        functions: str | Sequence[str] | None = None,
        **kwargs: object,
    ) -> types.ModuleType:
        self.check_toolchain()
        from torch.utils import cpp_extension

        s = self.settings
        cflags = s.cflags(_as_list(kwargs.get("extra_cflags")))  # type: ignore[arg-type]
        cuda_cflags = s.cflags(_as_list(kwargs.get("extra_cuda_cflags")))  # type: ignore[arg-type]
        key = cache_key(
            kind="rocm",
            cpp=_as_list(cpp_sources),
            cuda=_as_list(cuda_sources),
            functions=functions,
            cflags=cflags,
            cuda_cflags=cuda_cflags,
            settings=s,
        )
        modname = f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{key[:12]}"
        loaded: dict[str, types.ModuleType] = {}

        def build(tmp: Path) -> None:
            with _env_lock:
                saved = {k: os.environ.get(k) for k in s.env()}
                os.environ.update(s.env())
                try:
                    loaded["m"] = cpp_extension.load_inline(
                        name=modname,
                        cpp_sources=cpp_sources,
                        cuda_sources=cuda_sources,
                        functions=functions,
                        extra_cflags=cflags,
                        extra_cuda_cflags=cuda_cflags,
                        build_directory=str(tmp),
                        verbose=False,
                    )
                except Exception as exc:
                    raise CompileError("hipcc build failed", str(exc)) from exc
                finally:
                    for k, v in saved.items():
                        os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)

        path, hit = self.cache.get_or_build(key, build)
        module = loaded.get("m") or import_extension(modname, path / f"{modname}.so")
        module.__hipforge_build__ = {"backend": "rocm", "arch": s.arch, "cached": hit, "key": key}
        return module


