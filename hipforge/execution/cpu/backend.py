"""The cpu backend: HIP candidates compiled with g++ against hip_cpu_runtime.h.

``CpuBackend.load_inline`` takes torch's ``load_inline`` arguments. The HIP source (from
cpp_sources and/or cuda_sources) is rewritten (rewrite.py), compiled into one shared library
(content-addressed in a CompileCache) and returned as a module whose attributes are the
requested ``functions``. Tensors stay on the CPU; kernel launches run synchronously on
fibers (hip_cpu_runtime.h) with the wavefront size given to the backend.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from pathlib import Path

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import CompileCache, cache_key
from hipforge.execution.cpu import lite, loader, rewrite
from hipforge.execution.cpu.toolchain import HERE, PRELUDE, Toolchain
from hipforge.execution.extension import import_extension

_LIGHT_DROPS = ("torch/extension.h", "torch/torch.h", "torch/all.h", "torch/types.h", "ATen/ATen.h")


def _as_list(sources: str | Sequence[str] | None) -> list[str]:
    if sources is None:
        return []
    return [sources] if isinstance(sources, str) else list(sources)


def _functions(functions: str | Sequence[str] | dict | None) -> dict[str, str] | None:
    if functions is None:
        return None
    if isinstance(functions, str):
        return {functions: functions}
    if isinstance(functions, dict):
        return dict(functions)
    return {f: f for f in functions}


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _defines(flags: Sequence[str]) -> list[str]:
    """`-DX=1`/`-UX` from the candidate's extra flags, as preprocessor lines; other flags
    (optimization, offload arch, nvcc/hipcc options) do not apply to this toolchain."""
    lines = []
    for f in flags:
        if f.startswith("-D") and len(f) > 2:
            name, _, value = f[2:].partition("=")
            lines.append(f"#define {name} {value or '1'}")
        elif f.startswith("-U") and len(f) > 2:
            lines.append(f"#undef {f[2:]}")
    return lines


class CpuBackend:
    """HIP on the CPU. ``wavefront`` is the warp size kernels see (64 as on AMD, or 32)."""

    name = "cpu"
    torch_device = "cpu"

    def __init__(
        self,
        wavefront: int = 64,
        cache: CompileCache | None = None,
        pch_cache: CompileCache | None = None,
        toolchain: Toolchain | None = None,
    ) -> None:
        if wavefront not in (32, 64):
            raise ValueError("wavefront must be 32 or 64")
        self.wavefront = wavefront
        self.cache = cache or CompileCache()
        self.pch_cache = pch_cache or self.cache
        self.toolchain = toolchain or Toolchain()
        self.last_build: dict[str, object] = {}  # __hipforge_build__ of the last build

    # ------------------------------------------------------------------ public
    def load_inline(
        self,
        name: str,
        cpp_sources: str | Sequence[str],
        cuda_sources: str | Sequence[str] | None = None,
        functions: str | Sequence[str] | None = None,
        **kwargs: object,
    ) -> types.ModuleType:
        cpp, cuda = _as_list(cpp_sources), _as_list(cuda_sources)
        fns = _functions(functions)
        flags = [str(f) for key in ("extra_cflags", "extra_cuda_cflags") for f in (kwargs.get(key) or [])]
        includes = [str(Path(p).resolve()) for p in (kwargs.get("extra_include_paths") or [])]
        verbose = bool(kwargs.get("verbose", False))
        source = "\n".join(cpp + cuda)
        full = fns is None or rewrite.needs_full_torch(source)
        if not full and lite.supports(source):
            try:
                return lite.build(name, source, list(fns or {}), _defines(flags), includes, self.wavefront,
                                  self.toolchain, self.cache, self.pch_cache)
            except CompileError:  # torch-lite lacks what the source uses, or the source is wrong: the
                pass  # precompiled-header build below decides which, and its verdict stands
        if not full:
            so, info = self._build(name, cpp, cuda, fns, flags, includes, full=False, verbose=verbose)
            if not self._load(info, loader.unsupported_functions, so, fns):
                return self._load(info, loader.load_bridge_module, name, so, fns)
            # a bound function takes or returns a type the bridge does not convert: pybind11
        so, info = self._build(name, cpp, cuda, fns, flags, includes, full=True, verbose=verbose)
        return self._load(info, import_extension, name, so)

    def translation_unit(
        self,
        name: str,
        cpp: list[str],
        cuda: list[str],
        functions: dict[str, str] | None,
        flags: Sequence[str] = (),
        full: bool = False,
        prelude: Path | None = None,
        runtime_library: bool = False,
    ) -> str:
        """The C++ file compiled for a candidate (exposed for tests and debugging)."""
        if full:
            lines = ["#include <torch/extension.h>"]
        else:
            # the precompiled prelude is torch/types.h + hipforge_bridge.h
            lines = (
                [f'#include "{prelude / PRELUDE}"']
                if prelude
                else ["#include <torch/types.h>", '#include "hipforge_bridge.h"']
            )
        lines += _defines(flags)
        lines += [f"#define HIPCPU_WARP_SIZE {self.wavefront}"]
        if runtime_library:
            lines += ["#define HIPCPU_EXTERN_RUNTIME 1"]
        lines += ['#include "hip_cpu_runtime.h"']
        drops = () if full else _LIGHT_DROPS
        for label, parts in (("main.cpp", cpp), ("cuda.cu", cuda)):
            if parts:
                lines += [f'#line 1 "{label}"', rewrite.rewrite("\n".join(parts), drop_includes=drops)]
        lines.append('#line 1 "hipforge_bindings"')
        if full:
            if functions is not None:
                lines.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
                lines += [
                    f'm.def("{f}", torch::wrap_pybind_function({f}), {_c_string(d)});'
                    for f, d in functions.items()
                ]
                lines.append("}")
        else:
            lines += [f"HIPFORGE_EXPORT({f})" for f in functions or {}]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _load(info: dict, fn, *args):
        try:
            mod = fn(*args)
        except (OSError, ImportError) as e:  # e.g. an undefined symbol: the build is unusable
            raise CompileError(f"loading the built module failed: {e}", str(e)) from e
        if isinstance(mod, types.ModuleType):
            mod.__hipforge_build__ = info  # as the other backends: backend, mode, cached, key, seconds
        return mod

    def _build(
        self,
        name: str,
        cpp: list[str],
        cuda: list[str],
        fns: dict[str, str] | None,
        flags: list[str],
        includes: list[str],
        full: bool,
        verbose: bool,
    ) -> tuple[Path, dict[str, object]]:
        tc = self.toolchain
        prelude = None if full else tc.precompiled_prelude(self.pch_cache)
        runtime = tc.runtime_library(self.pch_cache, self.wavefront)
        tu = self.translation_unit(
            name, cpp, cuda, fns, flags, full=full, prelude=prelude, runtime_library=True
        )
        args = [*tc.compile_flags, "-I", str(HERE), *[f"-I{p}" for p in includes]]
        if full:
            args += [f"-DTORCH_EXTENSION_NAME={name}"]
        else:
            args += ["-Winvalid-pch"]
        link = [str(runtime), f"-Wl,-rpath,{runtime.parent}", *tc.link_flags]
        # an undefined symbol (a declared, never defined __device__ function, say) is a link
        # error here, not a failed import later; full builds also use symbols of the interpreter
        link += ["-ltorch_python"] if full else ["-Wl,--no-undefined"]
        key = cache_key(
            kind="cpu-module",
            source=tu.replace(str(prelude), "<prelude>") if prelude else tu,
            wavefront=self.wavefront,
            full=full,
            name=name if full else None,
            toolchain=tc.identity(),
            includes=includes,
            runtime=runtime.name,
            prelude=prelude.name if prelude else None,
        )
        result: dict[str, object] = {}

        def build(tmp: Path) -> None:
            (tmp / "module.cpp").write_text(tu)
            rc, log, seconds = tc.run([*args, "module.cpp", "-o", "module.so", *link], tmp, name)
            (tmp / "build.log").write_text(log)
            result["seconds"] = seconds
            if rc != 0:
                if "error" not in log:  # not the candidate's fault (killed, disk, ...): do not cache
                    raise CompileError(f"{name}: g++ exited with status {rc}", log)
                (tmp / "module.so").unlink(missing_ok=True)
                (tmp / "error.log").write_text(log)

        path, hit = self.cache.get_or_build(key, build)
        info = {
            "backend": "cpu",
            "mode": "full" if full else "bridge",
            "wavefront": self.wavefront,
            "cached": hit,
            "key": key,
            "seconds": round(float(result.get("seconds", 0.0)), 3),  # g++ time (0 when cached)
            "path": str(path),
        }
        self.last_build = info
        if verbose:
            print(
                f"[hipforge cpu] {name}: {'cached' if hit else 'built'} {path} "
                f"({info['seconds']:.1f} s, {info['mode']})",
                file=sys.stderr,
            )
        if (path / "error.log").exists():
            raise CompileError(f"{name}: compilation failed", (path / "error.log").read_text())
        return path / "module.so", info
