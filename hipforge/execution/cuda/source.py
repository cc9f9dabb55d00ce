"""Reading a candidate's C++/HIP source without a compiler: its top-level function definitions
(device or host), the declaration of a host function, and a device-only view of the source.

Good enough for what load_inline sources look like (kernels, helpers, host wrappers, macros); it is
a scanner, not a parser: braces in comments, strings and preprocessor lines are blanked first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_PREPROC = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_NAME = re.compile(r"(~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*$")
_SPECIFIERS = re.compile(
    r"\b(?:static|inline|extern|constexpr|__host__|__forceinline__|__inline__|"
    r"__attribute__\s*\(\(.*?\)\)|\[\[.*?\]\])\s*",
    re.S,
)
_QUALIFIERS = re.compile(r"(?:\s*\b(?:const|noexcept|override|final)\b)+\s*$")
_TORCH_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:torch|ATen|c10|pybind11|caffe2)/[^\n]*', re.M)


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def clean(source: str) -> str:
    """Comments, string and char literals and preprocessor lines blanked; offsets and lines kept."""

    def literal(m: re.Match) -> str:
        s = m.group(0)
        return s[0] + _blank(s[1:-1]) + s[-1] if s[0] in "\"'" else _blank(s)

    return _PREPROC.sub(lambda m: _blank(m.group(0)), _TOKENS.sub(literal, source))


@dataclass(frozen=True)
class FunctionDef:
    name: str
    prefix: str  # everything before the name: template header, qualifiers, return type
    params: str
    start: int  # offset where the definition's header starts
    body_start: int  # offset of '{'
    body_end: int  # offset just past '}'

    @property
    def is_device(self) -> bool:
        """Kernels and device-only functions; __host__ __device__ ones count as host too."""
        return "__global__" in self.prefix or ("__device__" in self.prefix and "__host__" not in self.prefix)

    @property
    def is_macro_block(self) -> bool:
        """PYBIND11_MODULE(name, m) { ... } and the like: a macro call with a body, no return type."""
        return not self.prefix.strip()

    def declaration(self) -> str:
        ret = _SPECIFIERS.sub("", self.prefix).strip()
        return f"{ret} {self.name}({self.params});"


def _match(text: str, i: int, open_: str, close: str) -> int:
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def _as_function(text: str, start: int, brace: int) -> FunctionDef | None:
    header = text[start:brace]
    head = header.split("->")[0] if "->" in header else header  # trailing return type
    head = _QUALIFIERS.sub("", head.rstrip())
    if not head.endswith(")") or re.match(
        r"\s*(?:template\s*<.*?>\s*)?(?:struct|class|union|enum)\b", head, re.S
    ):
        return None
    depth, j = 0, len(head) - 1
    while j >= 0:
        depth += {")": 1, "(": -1}.get(head[j], 0)
        if depth == 0:
            break
        j -= 1
    m = _NAME.search(head[:j])
    if j < 0 or not m or "=" in head[: m.start()].replace("==", ""):
        return None
    name = re.sub(r"\s+", "", m.group(1))
    return FunctionDef(
        name,
        head[: m.start()].strip(),
        head[j + 1 : -1].strip(),
        start,
        brace,
        _match(text, brace, "{", "}") + 1,
    )


def functions(source: str) -> list[FunctionDef]:
    """Top-level (and namespace- or extern "C"-level) function definitions, in source order."""
    text = clean(source)
    found: list[FunctionDef] = []

    def scan(lo: int, hi: int) -> None:
        seg, i = lo, lo
        while i < hi:
            c = text[i]
            if c in ";}":
                seg = i + 1
            elif c == "{":
                end = _match(text, i, "{", "}")
                header = text[seg:i]
                if re.search(r"\bnamespace\b|\bextern\s+\"\s*\"\s*$", header):
                    scan(i + 1, end)
                else:
                    fn = _as_function(text, seg + len(header) - len(header.lstrip()), i)
                    if fn:
                        found.append(fn)
                i, seg = end, end + 1
            i += 1

    scan(0, len(text))
    return found


def host_function(source: str, name: str) -> FunctionDef | None:
    """The definition load_inline would bind for `name` (the last one, if redefined)."""
    matches = [f for f in functions(source) if f.name == name and not f.is_device]
    return matches[-1] if matches else None


def device_only(source: str) -> str:
    """The source with every host function's body emptied, macro blocks (PYBIND11_MODULE, ...) and
    torch/pybind11 includes removed; line numbers stay, so messages still point at the original."""
    out, last = [], 0
    for fn in functions(source):
        if fn.is_device:
            continue
        if fn.is_macro_block:
            out += [source[last : fn.start], _blank(source[fn.start : fn.body_end])]
        else:
            body = source[fn.body_start + 1 : fn.body_end - 1]
            out += [source[last : fn.body_start], "{ __builtin_trap();", _blank(body), "}"]
        last = fn.body_end
    out.append(source[last:])
    return _TORCH_INCLUDE.sub(lambda m: _blank(m.group(0)), "".join(out))
