"""The gfx950 compile gate: does a candidate's HIP device code compile for MI350X? Runs anywhere.

Debian's clang-22 compiles HIP device code for gfx950 (`apt-get install clang-22 libamdhip64-dev`);
we stop before the device link, whose libraries are too old. Candidates' host wrappers use torch,
which cannot build in HIP mode against CPU torch, so the gate compiles the source against torch-lite
(hipforge/execution/cuda/torchlite: declarations only, so host code parses and template kernels are
instantiated from their launch sites). If the only errors are torch-lite gaps in host code, a second
pass compiles the device-only view (host bodies emptied, torch includes dropped): the gate judges
device code, and says so (`device_only=True`). Missing clang-22 gives `available=False`, never a pass.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hipforge import pyast
from hipforge.execution import gate_pch
from hipforge.execution.cuda import prelude
from hipforge.execution.cuda import source as scan

DEFAULT_ARCH = ("gfx950",)
# Debian's HIP 5.2 fp16 header calls two builtins clang-22's HIP wrapper no longer declares
_CLANG22_COMPAT = """extern "C" __device__ __attribute__((const)) _Float16 __llvm_amdgcn_rcp_f16(_Float16);
typedef _Float16 __hf_2f16 __attribute__((ext_vector_type(2)));
static __device__ inline __hf_2f16 __llvm_amdgcn_rcp_2f16(__hf_2f16 x) {
  return __hf_2f16{__llvm_amdgcn_rcp_f16(x.x), __llvm_amdgcn_rcp_f16(x.y)};
}
"""
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):\d+: (?:fatal )?error: (?P<msg>.*)$", re.M)
_LITE_GAP = re.compile(
    r"hipforge_lite|namespace '(?:torch|at|c10)(?:::\w+)*'|'(?:torch|at|c10|pybind11|py)::|"
    r"'(?:torch|ATen|c10|pybind11|caffe2)/[^']*' file not found|PYBIND11|\bpy(?:bind11)?\b"
)


@dataclass(frozen=True)
class GateResult:
    ok: bool
    arch: list[str]
    log: str
    seconds: float
    available: bool = True
    device_only: bool = False  # host code was set aside: torch API outside torch-lite


@dataclass
class CompileGate:
    clang: str = "clang++-22"
    arch: Sequence[str] = DEFAULT_ARCH
    rocm_path: str = "/usr"
    timeout_s: float = 180.0
    extra: list[str] = field(default_factory=list)

    def unavailable_reason(self) -> str | None:
        if shutil.which(self.clang) is None:
            return f"gate unavailable: {self.clang} not found (apt-get install clang-22 libamdhip64-dev)"
        if not (Path(self.rocm_path) / "include" / "hip" / "hip_runtime.h").exists():
            return (
                f"gate unavailable: no HIP headers under {self.rocm_path}/include "
                "(apt-get install libamdhip64-dev)"
            )
        return None

    def command(self, src: Path, obj: Path) -> list[str]:
        offload = [f"--offload-arch={a}" for a in self.arch]
        includes = [f"-I{d}" for d in prelude.lite_include_dirs(shim=False)]
        return [
            self.clang,
            "-x",
            "hip",
            *offload,
            "-nogpulib",
            f"--rocm-path={self.rocm_path}",
            "-D__AMDGCN_WAVEFRONT_SIZE=64",
            "-O3",
            "-fgpu-rdc",
            "--offload-device-only",  # the gate judges device code; host code is the backend build's (3x faster)
            "-std=c++20",
            "-Wno-unused-command-line-argument",
            *includes,
            *self.extra,
            "-c",
            str(src),
            # one object per arch in device-only mode: clang names them itself (the cwd is a temp dir)
            *(["-o", str(obj)] if len(self.arch) == 1 else []),
        ]

    def check(self, hip_source: str) -> GateResult:
        """Gate one HIP source (what a candidate passes to load_inline)."""
        start = time.perf_counter()
        arch = list(self.arch)
        reason = self.unavailable_reason()
        if reason:
            return GateResult(False, arch, reason, 0.0, available=False)
        ok, log = self._compile(hip_source)
        if ok:
            return GateResult(True, arch, log, time.perf_counter() - start)
        errors = _ERROR.findall(log)
        lite_only = errors and all(_is_lite_gap(f, msg) for f, _, msg in errors)
        if not lite_only:
            return GateResult(False, arch, log, time.perf_counter() - start)
        ok2, log2 = self._compile(scan.device_only(hip_source))
        note = (
            "host code set aside (torch API outside torch-lite); device code gated alone. Host errors:\n"
            + "\n".join(f"  {f}:{line}: {msg}" for f, line, msg in errors[:10])
        )
        return GateResult(ok2, arch, f"{note}\n{log2}".strip(), time.perf_counter() - start, device_only=True)

    def check_candidate(self, candidate_py: str) -> GateResult:
        """Gate a KernelBench-format Python candidate: every HIP source it hands to load_inline."""
        sources = hip_sources(candidate_py)
        if not sources:
            return GateResult(False, list(self.arch), "no HIP source found in the candidate", 0.0)
        return self.check("\n".join(sources))

    def _compile(self, hip_source: str, precompiled: bool = True) -> tuple[bool, str]:
        """Compile with the head precompiled; a rejection is confirmed without it, so no verdict against
        a source ever rests on the PCH."""
        head = f"{_CLANG22_COMPAT}{prelude.lite_prelude(hip_source)}"
        body = f'#line 1 "{prelude.CANDIDATE_FILE}"\n{hip_source}\n'
        pch = None
        if precompiled and len(self.arch) == 1:  # with several arches, device-only writes one output per arch
            pch = gate_pch.precompiled_head(head, self.command, self.clang, self.rocm_path, self.timeout_s)
        with tempfile.TemporaryDirectory(prefix="hipforge-gate-") as tmp:
            src, obj = Path(tmp) / "tu.hip", Path(tmp) / "tu.o"
            src.write_text(body if pch else head + body)
            command = self.command(src, obj) + (gate_pch.include_flags(pch) if pch else [])
            try:
                proc = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout_s, cwd=tmp)
            except subprocess.TimeoutExpired:
                return False, f"gate: clang timed out after {self.timeout_s:.0f} s"
        if proc.returncode != 0 and pch:
            return self._compile(hip_source, precompiled=False)
        return proc.returncode == 0, (proc.stdout + proc.stderr).strip()


def _is_lite_gap(file: str, msg: str) -> bool:
    """An error inside torch-lite or torch headers, or one naming a torch API."""
    return not file.endswith(prelude.CANDIDATE_FILE) or bool(_LITE_GAP.search(msg))


def hip_sources(candidate_py: str) -> list[str]:
    """The cpp_sources / cuda_sources strings a candidate module passes to load_inline (module-level
    string constants, names bound to them, lists and + of those). Falls back to every string literal
    that defines a __global__ function when the module does not parse."""
    try:
        tree = pyast.parse(candidate_py)
    except SyntaxError:
        literals = re.findall(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', candidate_py, re.S)
        return [a or b for a, b in literals if "__global__" in (a or b)]
    names: dict[str, str] = {}

    def value(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            return [names[node.id]] if node.id in names else []
        if isinstance(node, (ast.List, ast.Tuple)):
            return [s for elt in node.elts for s in value(elt)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = value(node.left), value(node.right)
            return ["".join(left + right)] if left and right else left + right
        return []

    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            joined = value(node.value)
            if joined:
                names[node.targets[0].id] = "\n".join(joined)
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "load_inline"
        ):
            args = {kw.arg: kw.value for kw in node.keywords}
            positional = dict(zip(("name", "cpp_sources", "cuda_sources"), node.args, strict=False))
            for key in ("cpp_sources", "cuda_sources"):
                if key in args or key in positional:
                    found += value(args.get(key) or positional[key])
    return found


def _archs(arch: str | Sequence[str]) -> tuple[str, ...]:
    return (arch,) if isinstance(arch, str) else tuple(arch)


def available() -> bool:
    """Whether clang-22 and the HIP headers are installed (else every gate says `available=False`)."""
    return CompileGate().unavailable_reason() is None


def gate(hip_source: str, arch: str | Sequence[str] = DEFAULT_ARCH) -> GateResult:
    """Gate one HIP source for `arch` (one name or several: "gfx950", ("gfx950", "gfx942"))."""
    return CompileGate(arch=_archs(arch)).check(hip_source)


def gate_candidate(candidate_py: str, arch: str | Sequence[str] = DEFAULT_ARCH) -> GateResult:
    """Gate a KernelBench-format Python candidate (the HIP sources it passes to load_inline)."""
    return CompileGate(arch=_archs(arch)).check_candidate(candidate_py)
