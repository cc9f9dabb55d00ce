"""hipforge's cuda-backend runtime (torchlite/rt.cpp): built once per torch install and machine,
kept in the compile cache, loaded once per process. It holds torch-lite's implementation and the
generic binder that turns a candidate's trampolines into Python callables."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import threading
import types
from pathlib import Path

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import CompileCache, cache_key
from hipforge.execution.cuda.prelude import LITE_DIR
from hipforge.execution.cuda.toolchain import Toolchain, TorchPaths, python_tag, run, tool_version
from hipforge.execution.extension import import_extension

MODULE = "hipforge_cuda_rt"
FILE = f"{MODULE}.so"
_loaded: dict[Path, types.ModuleType] = {}
_lock = threading.Lock()


@functools.cache  # read on every candidate build: our runtime sources do not change under a process
def sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(LITE_DIR.iterdir()):
        if path.suffix in {".h", ".cpp"}:
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def runtime_key(tc: Toolchain) -> str:
    torch = TorchPaths.current()
    return cache_key(
        kind="cuda-runtime",
        sources=sources_digest(),
        torch=torch.version,
        torch_lib=str(torch.lib),
        python=python_tag(),
        cxx=tool_version(tc.host_cxx),
        cuda=torch.has_cuda and tool_version(tc.nvcc),
        std=tc.std,
    )


def build(tc: Toolchain, cache: CompileCache) -> tuple[Path, bool, float]:
    """(directory holding the runtime, cache hit, seconds spent building)."""
    spent = 0.0

    def _build(tmp: Path) -> None:
        nonlocal spent
        spent, log = run(
            tc.compile_runtime(LITE_DIR / "rt.cpp", tmp / FILE, MODULE, LITE_DIR),
            "building the cuda runtime (once per torch install)",
            tc.timeout_s,
        )
        (tmp / "build.log").write_text(log)

    path, hit = cache.get_or_build(runtime_key(tc), _build)
    return path, hit, spent


def load(directory: Path) -> types.ModuleType:
    """Import the runtime extension (once per process); candidates' libraries link against it."""
    with _lock:
        if directory not in _loaded:
            _loaded[directory] = import_extension(MODULE, directory / FILE)
        return _loaded[directory]


def bind_library(name: str, library: Path, names: list[str], rt: types.ModuleType) -> types.ModuleType:
    """A module whose functions call a candidate library's trampolines (`HF_EXPORT`) through the
    runtime's binder, which converts arguments and results as pybind11 would."""
    try:
        lib = ctypes.CDLL(str(library), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as exc:
        raise CompileError("loading the candidate library failed", str(exc)) from exc
    module = types.ModuleType(name)
    for fn in names:
        sig_fn = getattr(lib, f"__hf_sig_{fn}")
        sig_fn.restype = ctypes.c_char_p
        ret, args = sig_fn().decode().split("|")
        address = ctypes.cast(getattr(lib, f"__hf_tramp_{fn}"), ctypes.c_void_p).value
        setattr(module, fn, rt.bind(fn, address, ret, [a for a in args.split(",") if a]))
    module.__file__ = str(library)
    module._hipforge_lib = lib  # keeps the library (and the trampolines) alive with the module
    return module
