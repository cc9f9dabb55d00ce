"""The cuda backend's full mode: torch's own load_inline (slow: ~30 s on the H200 host), for sources
that bind themselves (PYBIND11_MODULE, no `functions`) and for those using torch API outside torch-lite.
The HIP source goes in as `cuda_sources` with the shim and ROCm-torch header names on the include path,
the functions are declared in `cpp_sources` (read from the source), CXX is the host compiler."""

from __future__ import annotations

import os
import re
import threading
import types
from pathlib import Path

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import CompileCache, cache_key
from hipforge.execution.cuda import prelude, runtime, source
from hipforge.execution.cuda.toolchain import Toolchain, tool_version
from hipforge.execution.extension import import_extension

_env_lock = threading.Lock()


def build(
    tc: Toolchain, cache: CompileCache, name: str, src: str, names: list[str], flags: list[str]
) -> types.ModuleType:
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None:  # torch looked before nvcc's home was known (wrapper scripts)
        cpp_extension.CUDA_HOME = str(tc.cuda_home())
    decls = []
    for fn in names:
        found = source.host_function(src, fn)
        if found is None:
            raise CompileError(f"function {fn} is not defined in the source", f"no definition of {fn}(...)")
        decls.append(found.declaration())
    cuda_flags = [  # the arch comes from TORCH_CUDA_ARCH_LIST; ROCm builds keep half operators on
        tc.opt,
        "-U__CUDA_NO_HALF_OPERATORS__",
        "-U__CUDA_NO_HALF_CONVERSIONS__",
        "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
        "-U__CUDA_NO_HALF2_OPERATORS__",
        *flags,
    ]
    key = cache_key(
        kind="cuda-full",
        src=src,
        decls=decls,
        names=names,
        flags=cuda_flags,
        nvcc=tool_version(tc.nvcc),
        cxx=tool_version(tc.host_cxx),
        torch=runtime.runtime_key(tc),
    )
    modname = f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{key[:12]}"
    loaded: dict[str, types.ModuleType] = {}

    def build(tmp: Path) -> None:
        with _env_lock:
            saved = {k: os.environ.get(k) for k in ("CXX", "TORCH_CUDA_ARCH_LIST")}
            os.environ["CXX"] = tc.host_cxx  # never the candidate's hipcc
            os.environ["TORCH_CUDA_ARCH_LIST"] = _arch_list(tc.arch)
            try:
                loaded["m"] = cpp_extension.load_inline(
                    name=modname,
                    cpp_sources=["\n".join(decls)],
                    cuda_sources=[src],
                    functions=names or None,
                    extra_include_paths=[
                        str(prelude.SHIM_INCLUDE),
                        str(prelude.full_compat_include_dir()),
                    ],
                    extra_cuda_cflags=cuda_flags,
                    extra_cflags=["-O2"],
                    build_directory=str(tmp),
                    verbose=False,
                    with_cuda=True,
                )
            except Exception as exc:  # torch raises RuntimeError carrying the ninja/compiler output
                raise CompileError("torch load_inline (full mode) failed", str(exc)) from exc
            finally:
                for k, v in saved.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)

    path, hit = cache.get_or_build(key, build)
    module = loaded.get("m") or import_extension(modname, path / f"{modname}.so")
    module.__hipforge_build__ = {
        "backend": "cuda",
        "mode": "full",
        "cached": hit,
        "arch": tc.arch,
        "key": key,
    }
    return module


def _arch_list(arch: str) -> str:
    """sm_90 -> 9.0 (TORCH_CUDA_ARCH_LIST)."""
    digits = arch.split("_")[-1]
    return f"{digits[:-1]}.{digits[-1]}"


