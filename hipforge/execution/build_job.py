"""Jobs that build and run no candidate code: the backend's build of a candidate's load_inline call (the
arguments the candidate's process asked for, as data), and the gfx950 compile gate. They are the only jobs
with the build cache writable; the parent seals what they add (compile_cache.seal) before any candidate
loads it. A build still loads its result once (the backends pick their fallbacks by loading), so static
initializers of a candidate's library run here: the write recorder refuses their writes outside the cache."""

from __future__ import annotations

import os
import subprocess
import traceback
from typing import Any

from hipforge.execution.backend import CompileError, make_backend
from hipforge.execution.config import EvalConfig

# builds yield the cores to timed trials: on a GPU machine they run beside other evaluations' timed phases, and
# on the H200, with 8 evaluations building, the parent's walls of honest 0.05 ms kernels swung 0.3 ms a forward
BUILD_NICENESS = 19


def preload() -> None:
    """Paid once in the sandbox server, before any job forks: the compiler versions the backends' build-cache
    keys name (``g++ --version``, ``nvcc --version``). The candidate's job computes those keys to find its
    builds, and it cannot start a process (the sandbox refuses it fork and every clone but a thread's)."""
    from hipforge.execution.cpu.toolchain import Toolchain as CpuToolchain
    from hipforge.execution.cpu.toolchain import compiler_version
    from hipforge.execution.cuda.toolchain import Toolchain as CudaToolchain
    from hipforge.execution.cuda.toolchain import tool_version

    cpu, cuda = CpuToolchain(), CudaToolchain()
    for tool in {cpu.cxx, cuda.host_cxx, cuda.nvcc}:
        tool_version(tool)  # an absent tool is cached as such
    try:
        compiler_version(cpu.cxx)
    except (OSError, subprocess.SubprocessError):
        pass  # no g++: the cpu backend cannot build in any job


def build(job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
    os.nice(BUILD_NICENESS)  # the compilers it starts inherit it
    backend = make_backend(EvalConfig.from_dict(job["config"]))
    try:
        backend.load_inline(*job["args"], **job["kwargs"])
        channel.emit({"event": "built", "ok": True})
    except CompileError as e:
        channel.emit({"event": "built", "ok": False, "message": str(e), "log": e.log})
    except Exception as e:  # noqa: BLE001  # bad arguments from the candidate: its compile error
        channel.emit({"event": "built", "ok": False, "message": f"load_inline failed: {type(e).__name__}: {e}",
                      "log": traceback.format_exc()[-3000:]})


def gate(job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
    """The gfx950 device-code gate (clang) over the candidate's HIP sources, in the sandbox: an #include can
    read files."""
    from hipforge.execution.gate import CompileGate

    os.nice(BUILD_NICENESS)
    cfg = EvalConfig.from_dict(job["config"])
    arch = cfg.arch if cfg.arch.startswith("gfx") else "gfx950"  # sm_90 names a cuda build
    gate_ = CompileGate(arch=(arch,))
    if reason := gate_.unavailable_reason():
        channel.emit({"event": "gate", "ok": None, "log": reason})
        return
    result = gate_.check_candidate(job["candidate_source"])
    channel.emit({"event": "gate", "ok": result.ok, "log": result.log, "arch": arch})
