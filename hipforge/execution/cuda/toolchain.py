"""The cuda backend's toolchain: nvcc for candidates, the host C++ compiler for the runtime and the
link, and where torch keeps its headers and libraries. Commands are plain lists, built here and run
by `run`, so tests can read them without a GPU. torch is imported lazily, inside functions."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

from hipforge.execution.backend import CompileError


@functools.cache
def tool_version(tool: str) -> str:
    """`tool --version`, for cache keys (a new compiler must not reuse old builds)."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
        return out.stdout.strip()
    except OSError as exc:
        return f"unavailable: {exc}"


@dataclass(frozen=True)
class TorchPaths:
    version: str
    include: Path
    lib: Path
    python_include: str
    cxx11_abi: int
    has_cuda: bool

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def current() -> TorchPaths:
        import torch

        root = Path(torch.__file__).resolve().parent
        return TorchPaths(
            version=torch.__version__,
            include=root / "include",
            lib=root / "lib",
            python_include=sysconfig.get_path("include"),
            cxx11_abi=int(torch._C._GLIBCXX_USE_CXX11_ABI),
            has_cuda=torch.version.cuda is not None,
        )


@dataclass(frozen=True)
class Toolchain:
    nvcc: str = "nvcc"
    host_cxx: str = field(default_factory=lambda: shutil.which("g++") or shutil.which("c++") or "c++")
    arch: str = "sm_90"
    std: str = "c++20"
    opt: str = "-O3"
    timeout_s: float = 600.0

    def cuda_home(self) -> Path:
        """CUDA_HOME / CUDA_PATH, else nvcc's install (nvcc may be a wrapper script), else /usr/local/cuda."""
        found = shutil.which(self.nvcc)
        if not found:
            raise CompileError(f"nvcc not found ({self.nvcc})", f"{self.nvcc}: not on PATH")
        candidates = [
            os.environ.get("CUDA_HOME"),
            os.environ.get("CUDA_PATH"),
            Path(found).resolve().parent.parent,
            "/usr/local/cuda",
        ]
        for home in filter(None, candidates):
            if (Path(home) / "include" / "cuda_runtime.h").exists():
                return Path(home)
        raise CompileError("CUDA toolkit not found", f"no include/cuda_runtime.h under {candidates}")

    def cuda_lib_dir(self) -> Path:
        home = self.cuda_home()
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            if (home / sub / "libcudart.so").exists():
                return home / sub
        return home / "lib64"

    def compile_candidate(
        self, source: Path, obj: Path, include_dirs: list[Path], extra: list[str]
    ) -> list[str]:
        """nvcc -x cu: the candidate TU (torch-lite prelude) to an object; device code for self.arch."""
        torch = TorchPaths.current()
        return [
            self.nvcc,
            "-x",
            "cu",
            f"-std={self.std}",
            self.opt,
            f"-arch={self.arch}",
            "--expt-relaxed-constexpr",
            "-ccbin",
            self.host_cxx,
            "-Xcompiler",
            "-fPIC",
            f"-D_GLIBCXX_USE_CXX11_ABI={torch.cxx11_abi}",
            *[f"-I{d}" for d in include_dirs],
            *extra,
            "-c",
            str(source),
            "-o",
            str(obj),
        ]

    def link_candidate(self, obj: Path, out: Path, runtime_dir: Path, runtime_file: str) -> list[str]:
        """A plain shared library: the candidate's code, its trampolines, cudart; torch-lite's calls
        resolve to the runtime (already loaded in the process, matched by soname)."""
        cuda_lib = self.cuda_lib_dir()
        return [
            self.host_cxx,
            "-shared",
            "-o",
            str(out),
            str(obj),
            f"-L{runtime_dir}",
            f"-l:{runtime_file}",
            f"-Wl,-rpath,{runtime_dir}",
            f"-L{cuda_lib}",
            "-lcudart",
            f"-Wl,-rpath,{cuda_lib}",
        ]

    def compile_runtime(self, source: Path, out: Path, module: str, lite_dir: Path) -> list[str]:
        """g++ with <torch/extension.h>: slow (~30-70 s) but once per torch install."""
        torch = TorchPaths.current()
        cmd = [
            self.host_cxx,
            "-O2",
            f"-std={self.std}",
            "-fPIC",
            "-shared",
            str(source),
            "-o",
            str(out),
            f"-DTORCH_EXTENSION_NAME={module}",
            "-DTORCH_API_INCLUDE_EXTENSION_H",
            f"-D_GLIBCXX_USE_CXX11_ABI={torch.cxx11_abi}",
            f"-I{lite_dir}",
            f"-I{torch.include}",
            f"-I{torch.include / 'torch' / 'csrc' / 'api' / 'include'}",
            f"-I{torch.python_include}",
        ]
        libs = ["-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python"]
        if torch.has_cuda:
            cmd += ["-DHF_WITH_CUDA", f"-I{self.cuda_home() / 'include'}"]
            libs.insert(1, "-lc10_cuda")
        return cmd + [f"-L{torch.lib}", *libs, f"-Wl,-rpath,{torch.lib}", f"-Wl,-soname,{out.name}"]


def run(cmd: list[str], what: str, timeout_s: float, cwd: Path | None = None) -> tuple[float, str]:
    """Run one build step; CompileError with the full output when it fails."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"{what} timed out after {timeout_s:.0f} s", str(exc.output or "")) from exc
    except OSError as exc:
        raise CompileError(f"{what} could not start: {exc}", " ".join(cmd)) from exc
    log = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise CompileError(f"{what} failed (exit {proc.returncode})", log)
    return time.perf_counter() - start, log


def python_tag() -> str:
    return f"{sys.implementation.name}-{sys.version_info.major}.{sys.version_info.minor}"
