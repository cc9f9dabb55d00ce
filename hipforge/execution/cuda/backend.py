"""The cuda backend: KernelBench-format HIP candidates on NVIDIA GPUs, through nvcc and a HIP shim.

Two ways to build, same result (a module whose attributes are the `functions`):
- lite (default, ~1-3 s cold): the HIP source, prefixed with torch-lite (prelude.py), goes through
  nvcc alone; one `extern "C"` trampoline per function; a plain shared library loaded with ctypes;
  the runtime's generic binder makes the Python callables. No candidate compiles torch or pybind11.
- full (~30 s on the H200 host, torch's own path): torch's load_inline with the source as
  `cuda_sources`, the shim on the include path, the functions declared in `cpp_sources`. Used for
  sources that bind themselves (PYBIND11_MODULE, no `functions`) and as the fallback when torch-lite
  lacks an API a source uses.
The candidate's CXX never picks a compiler: nvcc and the host compiler come from the Toolchain.
"""

from __future__ import annotations

import concurrent.futures
import re
import time
import types
from collections.abc import Sequence
from pathlib import Path

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import CompileCache, cache_key
from hipforge.execution.cuda import full, prelude, runtime
from hipforge.execution.cuda.toolchain import Toolchain, run, tool_version

# what in a lite compile error means "torch-lite lacks this torch API", not "the candidate is wrong"
LITE_GAP = re.compile(
    r'namespace "(?:torch|at|c10)(?:::\w+)*" has no member|class "hipforge_lite::[\w:]+" has no member|'
    r'no instance of (?:overloaded function|constructor|function template) "hipforge_lite::|'
    r"hipforge_lite: unsupported|hipforge_torchlite\w*\.h\(\d+\): error|/torch/include/\S*\(\d+\): error|"
    r'cannot open source file "(?:torch|ATen|c10|pybind11|caffe2)/|'
    r'identifier "(?:py|pybind11|torch|at|c10|TORCH_\w+|AT_\w+|C10_\w+)" is undefined'
)
SELF_BINDING = re.compile(r"\bPYBIND11_MODULE\b|\bTORCH_LIBRARY(?:_IMPL)?\b|\bpybind11\b|\bpy::")
_FLAGS_OK = re.compile(r"^(?:-O[0-3s]|-D\w+(?:=\S*)?|-U\w+|--use_fast_math|-lineinfo)$")


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def function_names(functions: object) -> list[str]:
    names = list(functions) if isinstance(functions, dict) else _as_list(functions)  # type: ignore[arg-type]
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z_]\w*", n)]
    if bad:
        raise CompileError(f"invalid function names {bad}", "load_inline functions must be C++ identifiers")
    return names


def nvcc_flags(kwargs: dict) -> list[str]:
    """The candidate's flags nvcc understands (optimisation, defines, fast math); hipcc's others drop."""
    flags = _as_list(kwargs.get("extra_cuda_cflags")) + _as_list(kwargs.get("extra_cflags"))
    flags = ["--use_fast_math" if f in ("-ffast-math", "-use_fast_math") else f for f in flags]
    return [f for f in flags if _FLAGS_OK.match(f)]


class CudaBackend:
    name = "cuda"
    torch_device = "cuda"

    def __init__(
        self,
        arch: str = "sm_90",
        cache: CompileCache | None = None,
        nvcc: str = "nvcc",
        host_cxx: str | None = None,
        mode: str = "auto",
    ) -> None:
        if mode not in ("auto", "lite", "full"):
            raise ValueError(f"mode must be auto, lite or full, not {mode!r}")
        self.toolchain = Toolchain(nvcc=nvcc, arch=arch, **({"host_cxx": host_cxx} if host_cxx else {}))
        self.cache = cache or CompileCache()
        self.mode = mode
        self._modules: dict[tuple[str, str], types.ModuleType] = {}

    # -- protocol ------------------------------------------------------------------------------
    def load_inline(
        self,
        name: str,
        cpp_sources: str | Sequence[str],
        cuda_sources: str | Sequence[str] | None = None,
        functions: str | Sequence[str] | None = None,
        **kwargs: object,
    ) -> types.ModuleType:
        start = time.perf_counter()
        src = "\n".join(_as_list(cpp_sources) + _as_list(cuda_sources))
        names = function_names(functions)
        flags = nvcc_flags(kwargs)
        reason = None
        if self.mode == "full" or not names or SELF_BINDING.search(src):
            reason = (
                "mode full" if self.mode == "full" else "the source binds itself (pybind11 / no functions)"
            )
        else:
            try:
                module = self._lite(name, src, names, flags)
                return self._finish(module, start)
            except CompileError as err:
                if self.mode == "lite" or not LITE_GAP.search(err.log):
                    raise CompileError(str(err), err.log.replace("hipforge_lite::", "at::")) from None
                reason = "torch-lite lacks an API the source uses: " + _first_error(err.log)
        module = full.build(self.toolchain, self.cache, name, src, names, flags)
        module.__hipforge_build__["fallback_reason"] = reason
        return self._finish(module, start)

    def warm(self) -> float:
        """Build the runtime now so candidates never wait for it: once per torch install
        (23 s on the H200 host, 70-100 s on a busy 2-core machine)."""
        start = time.perf_counter()
        runtime.load(runtime.build(self.toolchain, self.cache)[0])
        return time.perf_counter() - start

    # -- lite ----------------------------------------------------------------------------------
    def _lite(self, name: str, src: str, names: list[str], flags: list[str]) -> types.ModuleType:
        tc = self.toolchain
        tu = prelude.lite_translation_unit(src, names)
        rt_key = runtime.runtime_key(tc)
        key = cache_key(
            kind="cuda-lite",
            tu=tu,
            flags=flags,
            arch=tc.arch,
            nvcc=tool_version(tc.nvcc),
            cxx=tool_version(tc.host_cxx),
            runtime=rt_key,
        )
        if (key, name) in self._modules:
            return self._modules[(key, name)]
        timings: dict[str, float] = {}

        def build(tmp: Path) -> None:
            (tmp / "candidate.cu").write_text(tu)
            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # runtime build overlaps nvcc
                rt = pool.submit(runtime.build, tc, self.cache)
                cmd = tc.compile_candidate(
                    tmp / "candidate.cu", tmp / "candidate.o", prelude.lite_include_dirs(shim=True), flags
                )
                timings["nvcc_s"], log = run(cmd, "nvcc", tc.timeout_s, cwd=tmp)
                rt_dir, _, timings["runtime_build_s"] = rt.result()
            timings["link_s"], _ = run(
                tc.link_candidate(tmp / "candidate.o", tmp / "candidate.so", rt_dir, runtime.FILE),
                "link",
                tc.timeout_s,
                cwd=tmp,
            )
            (tmp / "build.log").write_text(log)
            (tmp / "runtime_dir").write_text(str(rt_dir))

        path, hit = self.cache.get_or_build(key, build)
        rt = runtime.load(Path((path / "runtime_dir").read_text()))
        module = runtime.bind_library(name, path / "candidate.so", names, rt)
        module.__hipforge_build__ = {
            "backend": "cuda",
            "mode": "lite",
            "cached": hit,
            "arch": tc.arch,
            "key": key,
            **timings,
        }
        self._modules[(key, name)] = module
        return module

    @staticmethod
    def _finish(module: types.ModuleType, start: float) -> types.ModuleType:
        module.__hipforge_build__["seconds"] = round(time.perf_counter() - start, 3)
        return module


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line:
            return line.strip()[:300]
    return log.strip()[:300]
