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

_IDENT = re.compile(r"[A-Za-z_]\w*")


def mask_source(src: str) -> str:
    """Blank comments and the insides of string/char literals, keeping length and newlines."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif (
            c == "R"
            and src.startswith('R"', i)
            and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))
        ):
            m = re.compile(r'R"([^()\\ ]{0,16})\(').match(src, i)
            if not m:
                i += 1
                continue
            end = src.find(")" + m.group(1) + '"', m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            blank(i + 2, end - 1)
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and (src[i - 1].isalnum()) and i + 1 < n and src[i + 1].isalnum():
                i += 1  # digit separator, e.g. 1'000'000
                continue
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        elif c == "\\" and i + 1 < n and src[i + 1] == "\n":
            out[i] = " "  # line continuation: whitespace for the scanners
            i += 1
        else:
            i += 1
    return "".join(out)


def _match_forward(m: str, i: int) -> int:
    """Index just after the bracket closing the one at m[i]; -1 if unbalanced."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    for j in range(i, len(m)):
        c = m[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return j + 1
    return -1


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for j, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:j])
            start = j + 1
    parts.append(text[start:])
    return parts


def _kernel_start(m: str, end: int) -> int:
    """Start of the kernel expression that ends just before index `end` (the `<<<`)."""
    j = end
    while j > 0 and m[j - 1].isspace():
        j -= 1
    if j > 0 and m[j - 1] == ">":  # template arguments
        depth = 0
        while j > 0:
            c = m[j - 1]
            if c == ">":
                depth += 1
            elif c == "<":
                depth -= 1
                if depth == 0:
                    j -= 1
                    break
            j -= 1
        while j > 0 and m[j - 1].isspace():
            j -= 1
    if j > 0 and m[j - 1] == ")":  # (kernel_expression)
        depth = 0
        while j > 0:
            c = m[j - 1]
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    return j - 1
            j -= 1
        return j
    # identifier chain a::b::c
    while True:
        k = j
        while k > 0 and (m[k - 1].isalnum() or m[k - 1] == "_"):
            k -= 1
        if k == j:
            return j
        j = k
        t = j
        while t > 0 and m[t - 1].isspace():
            t -= 1
        if t >= 2 and m[t - 2 : t] == "::":
            j = t - 2
            while j > 0 and m[j - 1].isspace():
                j -= 1
            continue
        return j


def _launches(src: str, m: str) -> list[tuple[int, int, str]]:
    edits = []
    pos = 0
    while True:
        a = m.find("<<<", pos)
        if a < 0:
            return edits
        pos = a + 3
        # the matching >>> at bracket depth 0
        depth, b = 0, -1
        for j in range(a + 3, len(m) - 2):
            c = m[j]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif depth == 0 and m.startswith(">>>", j):
                b = j
                break
        if b < 0:
            continue
        p = b + 3
        while p < len(m) and m[p].isspace():
            p += 1
        if p >= len(m) or m[p] != "(":
            continue
        q = _match_forward(m, p)
        if q < 0:
            continue
        k0 = _kernel_start(m, a)
        k1 = k0 + len(src[k0:a].rstrip())
        kexpr = src[k0:k1]
        if not kexpr:
            continue
        cfg = _split_top_level(src[a + 3 : b])
        if not 2 <= len(cfg) <= 4 or any(not c.strip() for c in cfg):
            continue
        cfg += ["0"] * (4 - len(cfg))
        args = src[p + 1 : q - 1]
        kname = " ".join(kexpr.split()).replace("\\", "\\\\").replace('"', '\\"')
        # whitespace between the pieces (newlines, line continuations) moves to the front
        gaps = src[k1:a] + src[b + 3 : p]
        text = (
            f'::hip_cpu::launch({gaps}"{kname}", __FILE__, __LINE__, {cfg[0]}, {cfg[1]}, {cfg[2]}, {cfg[3]}, '
            f"[&](auto&... hipcpu_args_) {{ {kexpr}(hipcpu_args_...); }}"
            + (f", {args}" if args.strip() else "")
            + ")"
        )
        edits.append((k0, q, text))
        pos = q


def _brace_kinds(m: str) -> list[tuple[int, bool]]:
    """(position, is_function_body-or-block) for every `{`, in order."""
    kinds = []
    for mo in re.finditer(r"\{", m):
        before = m[max(0, mo.start() - 200) : mo.start()]
        ns = re.search(r'(\bnamespace\b[\w\s:]*|\bextern\s*"[^"]*"\s*)$', before)
        kinds.append((mo.start(), ns is None))
    return kinds


def _in_function(m: str, pos: int, kinds: list[tuple[int, bool]]) -> bool:
    stack: list[bool] = []
    k = 0
    for j in range(pos):
        c = m[j]
        if c == "{":
            while k < len(kinds) and kinds[k][0] < j:
                k += 1
            stack.append(kinds[k][1] if k < len(kinds) and kinds[k][0] == j else True)
        elif c == "}" and stack:
            stack.pop()
    return any(stack)


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
            kinds = _brace_kinds(m)
        if _in_function(m, mo.start(), kinds):
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
        end = _match_forward(m, mo.end() - 1)
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
    edits += _launches(src, m)
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
