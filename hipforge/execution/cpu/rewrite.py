"""Syntax rewrite that lets unmodified HIP candidates compile as C++ on the CPU.

Only syntax the C++ compiler cannot take is touched; the meaning of the code stays:
- ``k<<<grid, block[, shmem[, stream]]>>>(args)`` (template kernels too) becomes a call of
  ``hip_cpu::launch`` that runs ``k(args)`` once per GPU thread;
- ``extern __shared__ T name[];`` becomes a pointer to the launch's dynamic shared memory;
- ``__global__``/``__device__``/``__host__``/``__forceinline__``/``__launch_bounds__(...)``/
  ``__shared__``/``__constant__`` become their C++ equivalents;
- HIP and torch-CUDA/HIP includes are dropped: hip_cpu_runtime.h is always included first,
  as hipcc always includes hip_runtime.h;
- the device identity: tensors of the cpu backend live on the CPU, so ``x.is_cuda()``,
  ``kCUDA``/``kHIP`` and ``.cuda()`` name the CPU device.
Line numbers are preserved (every replacement keeps its newlines), so compiler messages and
the runtime's deadlock report point at the candidate's own lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hipforge.execution.cpu.cxx_scan import brace_kinds, in_function, mask_source, match_forward
from hipforge.execution.cpu.launch_syntax import launch_edits

_KEYWORDS = {
    "__global__": "",
    "__device__": "",
    "__host__": "",
    "__forceinline__": "inline",
    "__noinline__": "__attribute__((noinline))",
    "__constant__": "",
    "__managed__": "",
}

# includes replaced by the runtime header (which the backend includes first anyway)
_RUNTIME_INCLUDE = re.compile(
    r"^(hip/.*|hip_runtime\.h|hip_runtime_api\.h|(ATen|c10)/(cuda|hip)/.*"
    r"|cuda_runtime\.h|cuda_runtime_api\.h|cuda\.h|cuda_fp16\.h|cuda_bf16\.h)$"
)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"][^\n]*', re.M)

_DEVICE_IDENTITY = [
    (re.compile(r"\.\s*is_cuda\s*\(\s*\)"), ".is_cpu()"),
    (re.compile(r"\b((?:torch|at|c10)\s*::\s*)?k(?:CUDA|HIP)\b"), r"\1kCPU"),
    (re.compile(r"\bDeviceType\s*::\s*(?:CUDA|HIP)\b"), "DeviceType::CPU"),
    (re.compile(r"\.\s*cuda\s*\(\s*\)"), ".cpu()"),
]

_EXTERN_SHARED = re.compile(r"\bextern\s+(?:\"[^\"]*\"\s+)?__shared__\b")
_ATTRS = re.compile(
    r"__align__\s*\([^()]*\)|alignas\s*\([^()]*\)|__attribute__\s*\(\([^()]*(?:\([^()]*\))?[^()]*\)\)"
)


def _extern_shared(src: str, m: str) -> list[tuple[int, int, str]]:
    edits = []
    kinds = None
    for mo in _EXTERN_SHARED.finditer(m):
        semi = m.find(";", mo.end())
        if semi < 0:
            continue
        decl = src[mo.end() : semi]
        dm = re.match(r"(?s)^(.*?)\b([A-Za-z_]\w*)\s*\[\s*\]\s*$", decl)
        if not dm:
            continue
        ctype = " ".join(_ATTRS.sub(" ", dm.group(1)).split())
        name = dm.group(2)
        if not ctype:
            continue
        if kinds is None:
            kinds = brace_kinds(m)
        if in_function(m, mo.start(), kinds):
            text = f"{ctype}* {name} = reinterpret_cast<{ctype}*>(::hip_cpu::dynamic_shared());"
        else:
            text = f"static ::hip_cpu::dynamic_shared_array<{ctype}> {name};"
        edits.append((mo.start(), semi + 1, text + "\n" * src[mo.start() : semi + 1].count("\n")))
    return edits


def _keywords(src: str, m: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    edits = []

    def free(a: int, b: int) -> bool:
        return not any(x < b and a < y for x, y in taken)

    for mo in re.finditer(r"\b(?:static\s+)?__shared__\b", m):
        if free(mo.start(), mo.end()):
            edits.append((mo.start(), mo.end(), "static thread_local"))
    for mo in re.finditer(r"\b__launch_bounds__\s*\(", m):
        end = match_forward(m, mo.end() - 1)
        if end > 0 and free(mo.start(), end):
            edits.append((mo.start(), end, "\n" * src[mo.start() : end].count("\n")))
    for mo in re.finditer(r"\b(" + "|".join(_KEYWORDS) + r")\b", m):
        if free(mo.start(), mo.end()):
            edits.append((mo.start(), mo.end(), _KEYWORDS[mo.group(1)]))
    for rx, repl in _DEVICE_IDENTITY:
        for mo in rx.finditer(m):
            if free(mo.start(), mo.end()):
                edits.append((mo.start(), mo.end(), mo.expand(repl)))
    return edits


def _includes(src: str, m: str, drop: Sequence[str]) -> list[tuple[int, int, str]]:
    edits = []
    for mo in _INCLUDE.finditer(src):
        if m[mo.start() : mo.end()].lstrip()[:1] != "#":
            continue  # inside a comment
        path = mo.group(1).strip()
        if _RUNTIME_INCLUDE.match(path) or path in drop:
            edits.append((mo.start(), mo.end(), "// [hipforge cpu] " + mo.group(0).strip()))
    return edits


def rewrite(src: str, drop_includes: Sequence[str] = ()) -> str:
    """Rewrite HIP source `src` for hip_cpu_runtime.h; line numbers are kept.

    `drop_includes` names further headers to drop (the backend's precompiled prelude
    already provides torch/types.h, which stands in for torch/extension.h).
    """
    m = mask_source(src)
    edits = _includes(src, m, drop_includes)
    edits += launch_edits(src, m)
    edits += _extern_shared(src, m)
    edits.sort()
    # launches and extern __shared__ may contain keywords in their copied text: rewrite
    # those spans recursively, the rest of the keywords in place.
    final: list[tuple[int, int, str]] = []
    for a, b, text in edits:
        if final and a < final[-1][1]:
            continue  # overlapping (a launch inside a launch's arguments): keep the outer one
        final.append((a, b, text))
    taken = [(a, b) for a, b, _ in final]
    nested = []
    for a, b, text in final:
        if "hip_cpu::launch(" in text:
            # kernel arguments and config may hold further syntax to rewrite
            text = _rewrite_inner(text)
        nested.append((a, b, text))
    nested += _keywords(src, m, taken)
    nested.sort()
    out, last = [], 0
    for a, b, text in nested:
        if a < last:
            continue
        out.append(src[last:a])
        out.append(text)
        last = b
    out.append(src[last:])
    return "".join(out)


def _rewrite_inner(text: str) -> str:
    head = "::hip_cpu::launch("
    return head + rewrite(text[len(head) :]) if text.startswith(head) else text


def needs_full_torch(src: str) -> bool:
    """Whether the source uses more of torch than torch/types.h provides (pybind11, nn, ...)."""
    return bool(
        re.search(
            r"\b(?:PYBIND11_\w+|pybind11\s*::|py\s*::|torch\s*::\s*(?:nn|optim|autograd|jit|data|serialize|python)\b"
            r"|THP\w+|Py[A-Z]\w*\s*\(|torch/(?:python|script)\.h)",
            mask_source(src),
        )
    )
