"""g++ invocations of the cpu backend: flags, the shared parts built once, one-shot builds.

What a translation unit includes dominates compile time (DESIGN.md §5). A kernel TU here
includes a precompiled header of torch/types.h plus hipforge_bridge.h (built once per torch
version, compiler and flags), takes the fiber scheduler from a small library (built once per
wavefront; both kept in a CompileCache) and binds its functions through the bridge's C ABI
instead of pybind11: ~5 s of g++ per kernel instead of ~30. Sources that need more of torch
(pybind11, torch::nn, ...) take the full path: torch/extension.h and pybind11 bindings, as
load_inline builds them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sysconfig
import time
from pathlib import Path

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import CompileCache, cache_key

HERE = Path(__file__).resolve().parent
RUNTIME_HEADER = HERE / "hip_cpu_runtime.h"
BRIDGE_HEADER = HERE / "hipforge_bridge.h"
PRELUDE = "hipforge_prelude.h"


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@functools.cache
def compiler_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip()


@functools.cache
def torch_paths() -> tuple[list[str], str, str]:
    """(include dirs, library dir, torch version); imports torch lazily."""
    import torch
    from torch.utils import cpp_extension

    includes = list(cpp_extension.include_paths("cpu"))
    py_include = sysconfig.get_path("include", scheme="posix_prefix")
    if py_include:
        includes.append(py_include)
    return includes, cpp_extension.library_paths("cpu")[0], torch.__version__


class Toolchain:
    """g++ with the flags of one optimization level; `opt` is part of every cache key."""

    def __init__(self, cxx: str | None = None, opt: str = "-O2", timeout_s: float = 600.0) -> None:
        self.cxx = cxx or os.environ.get("HIPFORGE_CPU_CXX") or shutil.which("g++") or "g++"
        self.opt = opt
        self.timeout_s = timeout_s

    @functools.cached_property
    def compile_flags(self) -> list[str]:
        includes, _, _ = torch_paths()
        flags = [self.opt, "-std=c++20", "-fPIC", "-DTORCH_API_INCLUDE_EXTENSION_H"]
        for inc in includes:
            flags += ["-isystem", inc]
        return flags

    @functools.cached_property
    def link_flags(self) -> list[str]:
        _, libdir, _ = torch_paths()
        return ["-shared", f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lc10", "-ltorch_cpu", "-ltorch"]

    def identity(self) -> dict[str, object]:
        """Everything about the toolchain that changes a build's output."""
        _, _, torch_version = torch_paths()
        return {
            "torch": torch_version,
            "compiler": compiler_version(self.cxx),
            "flags": self.compile_flags,
            "link": self.link_flags,
        }

    def run(self, args: list[str], cwd: Path, what: str) -> tuple[int, str, float]:
        """Run g++; returns (exit status, log, seconds). Raises CompileError on a timeout."""
        cmd = [self.cxx, *args]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired as e:
            log = (
                f"$ {' '.join(cmd)}\n{e.stdout or ''}{e.stderr or ''}\ntimed out after {self.timeout_s:.0f} s"
            )
            raise CompileError(f"{what}: compiler timed out", log) from None
        seconds = time.perf_counter() - t0
        log = f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        return proc.returncode, log, seconds

    def precompiled_prelude(self, cache: CompileCache) -> Path:
        """Directory holding hipforge_prelude.h and its .gch, built once per toolchain."""
        key = cache_key(kind="cpu-pch", toolchain=self.identity(), bridge=file_hash(BRIDGE_HEADER))

        def build(tmp: Path) -> None:
            shutil.copy(BRIDGE_HEADER, tmp / BRIDGE_HEADER.name)
            (tmp / PRELUDE).write_text(
                f'#pragma once\n#include <torch/types.h>\n#include "{BRIDGE_HEADER.name}"\n'
            )
            rc, log, seconds = self.run(
                [*self.compile_flags, "-x", "c++-header", PRELUDE, "-o", PRELUDE + ".gch"],
                tmp,
                "precompiled header",
            )
            if rc != 0:
                raise CompileError("building the precompiled header failed", log)
            (tmp / "build.log").write_text(f"{log}\n[{seconds:.1f} s]\n")

        path, _ = cache.get_or_build(key, build)
        return path

    def runtime_library(self, cache: CompileCache, wavefront: int) -> Path:
        """The scheduler of hip_cpu_runtime.h compiled once per wavefront (HIPCPU_BUILD_RUNTIME)."""
        key = cache_key(
            kind="cpu-runtime", toolchain=self.identity(), runtime=file_hash(RUNTIME_HEADER), wave=wavefront
        )
        lib = f"libhipcpu_{key}.so"

        def build(tmp: Path) -> None:
            shutil.copy(RUNTIME_HEADER, tmp / RUNTIME_HEADER.name)
            (tmp / "runtime.cpp").write_text(
                "#define HIPCPU_BUILD_RUNTIME 1\n"
                f"#define HIPCPU_WARP_SIZE {wavefront}\n"
                f'#include "{RUNTIME_HEADER.name}"\n'
            )
            rc, log, seconds = self.run(
                [*self.compile_flags, "-shared", "runtime.cpp", "-o", lib, f"-Wl,-soname,{lib}", "-pthread"],
                tmp,
                "hip_cpu runtime",
            )
            if rc != 0:
                raise CompileError("building the hip_cpu runtime library failed", log)
            (tmp / "build.log").write_text(f"{log}\n[{seconds:.1f} s]\n")

        path, _ = cache.get_or_build(key, build)
        return path / lib
