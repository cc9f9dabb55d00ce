"""The cpu backend's fast build: the candidate against torch-lite and hip_cpu_runtime.h.

torch-lite (the cuda backend's declarations-only slice of torch, its calls going out of line to a
runtime built once) costs a translation unit ~1.3 s of g++ where the precompiled torch/types.h costs
~6 s: loading that header alone takes 3 s. Functions bind through the same runtime as on the cuda
backend. Anything this path cannot build (a torch API torch-lite lacks, half types) raises
CompileError, and the backend builds the candidate the slower way, whose verdict then stands.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from pathlib import Path

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import CompileCache, cache_key
from hipforge.execution.cpu import rewrite
from hipforge.execution.cpu.toolchain import HERE, RUNTIME_HEADER, Toolchain
from hipforge.execution.cuda import prelude, runtime
from hipforge.execution.cuda.toolchain import Toolchain as RuntimeToolchain

# what the lite prelude's `#include <hip/hip_runtime.h>` finds: the CPU runtime, not the NVIDIA shim
_SHIM = {"hip/hip_runtime.h": f'#pragma once\n#include "{RUNTIME_HEADER.name}"\n'}


def supports(source: str) -> bool:
    """Half types take torch's own c10 headers, which torch-lite does not pair with the CPU runtime."""
    return not prelude.needs_half(source)


def translation_unit(source: str, functions: list[str], wavefront: int, defines: Sequence[str]) -> str:
    head = [f"#define HIPCPU_WARP_SIZE {wavefront}", "#define HIPCPU_EXTERN_RUNTIME 1", *defines]
    return "\n".join(head) + "\n" + prelude.lite_translation_unit(rewrite.rewrite(source), functions)


def build(name: str, source: str, functions: list[str], defines: Sequence[str], includes: Sequence[str],
          wavefront: int, toolchain: Toolchain, cache: CompileCache, shared: CompileCache) -> types.ModuleType:
    """Compile, link against the torch-lite runtime and hip_cpu's scheduler, bind ``functions``."""
    rt_toolchain = RuntimeToolchain(host_cxx=toolchain.cxx)
    rt_dir, _, _ = runtime.build(rt_toolchain, shared)
    scheduler = toolchain.runtime_library(shared, wavefront)
    tu = translation_unit(source, functions, wavefront, defines)
    dirs = [str(prelude.materialize("cpu-hip-shim", _SHIM)), str(HERE), str(prelude.stub_include_dir()),
            str(prelude.LITE_DIR), *includes]
    key = cache_key(kind="cpu-lite", tu=tu, toolchain=toolchain.identity(), includes=dirs[4:],
                    runtime=runtime.runtime_key(rt_toolchain), scheduler=scheduler.name)
    result: dict[str, float] = {}

    def compile_and_link(tmp: Path) -> None:
        (tmp / "candidate.cpp").write_text(tu)
        compile_ = [toolchain.opt, "-std=c++20", "-fPIC", *[f"-I{d}" for d in dirs], "-c", "candidate.cpp",
                    "-o", "candidate.o"]
        link = ["-shared", "-o", "candidate.so", "candidate.o", f"-L{rt_dir}", f"-l:{runtime.FILE}",
                f"-Wl,-rpath,{rt_dir}", str(scheduler), f"-Wl,-rpath,{scheduler.parent}", "-Wl,--no-undefined"]
        log = ""
        for step in (compile_, link):
            rc, out, seconds = toolchain.run(step, tmp, name)
            log += out
            result["seconds"] = result.get("seconds", 0.0) + seconds
            if rc != 0:
                if "error" not in out:  # killed, out of disk, ...: not the source's doing, not cached
                    raise CompileError(f"{name}: g++ exited with status {rc}", log)
                (tmp / "error.log").write_text(log)  # cached: the next attempt falls back at once
                break
        (tmp / "build.log").write_text(log)

    path, hit = cache.get_or_build(key, compile_and_link)
    if (path / "error.log").exists():
        raise CompileError(f"{name}: the torch-lite build failed", (path / "error.log").read_text())
    try:
        module = runtime.bind_library(name, path / "candidate.so", functions, runtime.load(rt_dir))
    except (AttributeError, RuntimeError, TypeError, ValueError) as err:  # a signature the binder lacks
        raise CompileError(f"{name}: torch-lite cannot bind its functions", str(err)) from err
    module.__hipforge_build__ = {"backend": "cpu", "mode": "lite", "wavefront": wavefront, "cached": hit,
                                 "key": key, "seconds": round(result.get("seconds", 0.0), 3), "path": str(path)}
    return module
