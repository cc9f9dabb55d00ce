"""A precompiled head for the gfx950 gate: the clang-22 compat lines and the torch-lite prelude, built
once per content. Parsing ROCm's hip_runtime.h takes ~1.8 s of the gate's ~2 s per source; after the
head, a source takes ~0.4 s. The key holds everything the head is built from (its text, clang, the
flags, torch-lite's and the HIP headers' contents), so the PCH is loaded without clang's file checks:
the stub headers it was built with live in another job's private temp dir."""

from __future__ import annotations

import functools
import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path

from hipforge.execution.compile_cache import CompileCache, cache_key
from hipforge.execution.cuda import runtime
from hipforge.execution.cuda.toolchain import tool_version

Command = Callable[[Path, Path], list[str]]  # the gate's compile command for (source, output)


def include_flags(pch: Path) -> list[str]:
    return ["-Xclang", "-include-pch", "-Xclang", str(pch), "-Xclang", "-fno-validate-pch"]


def precompiled_head(head: str, command: Command, clang: str, rocm_path: str, timeout_s: float) -> Path | None:
    """The PCH of ``head`` built with the gate's single-arch ``command``, or None when it cannot be built (a
    clang that refuses): the gate then parses the head with every source, as before."""
    flags = [f for f in command(Path("head.h"), Path("head.pch")) if not f.startswith("-I")]
    key = cache_key(kind="gate-pch", head=head, flags=flags, clang=tool_version(clang),
                    lite=runtime.sources_digest(), hip=_hip_headers(rocm_path))

    def build(tmp: Path) -> None:
        (tmp / "head.h").write_text(head)
        cmd = [*command(tmp / "head.h", tmp / "head.pch"), "-Xclang", "-emit-pch"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
        if proc.returncode != 0:
            raise RuntimeError(f"the gate's precompiled head did not build:\n{proc.stdout}{proc.stderr}")

    try:
        path, _ = CompileCache().get_or_build(key, build)
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        return None
    return path / "head.pch"


@functools.cache  # read on every gate call; installed headers do not change under a process
def _hip_headers(rocm_path: str) -> str:
    """The installed HIP headers' identity: hip_version.h and hip_runtime.h's contents."""
    digest = hashlib.sha256()
    for name in ("hip_version.h", "hip_runtime.h"):
        file = Path(rocm_path) / "include" / "hip" / name
        digest.update(file.read_bytes() if file.exists() else b"missing")
    return digest.hexdigest()[:16]
