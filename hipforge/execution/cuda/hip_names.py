"""Entries of the cuda backend's HIP -> CUDA name table, read from HIP's headers: `#define hipX` and
`typedef ... cudaX hipY;` lines, inline wrappers that only forward their parameters to one cudaX call, and
the (case, value) pairs of a switch. Nothing that needs the driver API (cu*, libcuda) is aliased. shim_gen.py
assembles, checks and writes the table."""

from __future__ import annotations

import re
from dataclasses import dataclass

_DRIVER = re.compile(r"\bcu[A-Z]\w*|\bCU\w*|\bCUDA_\w*DESC\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
# calls that only convert between HIP and CUDA spellings of one value: identities once aliased
_CONVERT = re.compile(r"^(?:hipErrorToCudaError|hipMemcpyKindToCudaMemcpyKind)\s*\((.*)\)$", re.S)
_CAST = re.compile(r"^\(\s*(?:const\s+)?(?:enum\s+|struct\s+)?\w+\s*\**\s*\)\s*(.*)$", re.S)


@dataclass(frozen=True)
class Entry:
    hip: str
    line: str  # the C++ line defining it
    section: str
    probe: str | None = None  # a line that uses it (a macro is only checked where it expands)


def alias(hip: str, target: str, section: str) -> Entry:
    # a function (maybe overloaded) is checked by a using-declaration, a value (maybe a macro) by use
    value = f"namespace hf_p_{hip} {{ inline auto v() {{ return {hip}; }} }}"
    probe = value
    if _IDENT.fullmatch(target):
        probe = f"#if defined({target})\n{value}\n#else\nnamespace hf_p_{hip} {{ using ::{hip}; }}\n#endif"
    return Entry(hip, f"#define {hip} {target}", section, probe)


def strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def defines(text: str) -> list[Entry]:
    out = []
    for m in re.finditer(r"^[ \t]*#define[ \t]+(hip\w+|HIP_\w+)[ \t]+((?:[^\n\\]|\\\n)+)$", text, re.M):
        target = " ".join(m.group(2).replace("\\\n", " ").split())
        if target and not _DRIVER.search(target) and "hip" not in target.lower():
            out.append(alias(m.group(1), target, "constants and flags"))
    return out


def typedefs(text: str) -> list[Entry]:
    out = []
    for m in re.finditer(r"^typedef\s+((?:enum|struct)\s+)?(cuda\w+)(\s*\*)?\s+(hip\w+)\s*;", text, re.M):
        kind, target, ptr, hip = m.groups()
        out.append(Entry(hip, f"typedef {kind or ''}{target}{ptr or ''} {hip};", "types"))
    return out


def _params(decl: str) -> list[str]:
    """The parameter names of a declaration (defaults and __dparm(...) dropped)."""
    names = []
    for p in _split_args(decl):
        ident = _IDENT.findall(p.split("__dparm")[0].split("=")[0])
        if ident and ident[-1] != "void":
            names.append(ident[-1])
    return names


def _unwrap(arg: str) -> str:
    """`hipMemcpyKindToCudaMemcpyKind(kind)`, `(cudaStreamCallback_t)callback` -> the parameter
    (identities once HIP's types are CUDA's)."""
    arg = arg.strip()
    while m := _CONVERT.match(arg) or _CAST.match(arg):
        arg = m.group(1).strip()
    return arg


def _balanced(text: str, i: int) -> int:
    """Offset just past the parenthesis that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j + 1
    return len(text)


def _split_args(args: str) -> list[str]:
    depth, parts, cur = 0, [], ""
    for c in args:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    return [p for p in parts + [cur] if p.strip()]


def wrappers(text: str) -> list[Entry]:
    """Inline wrappers that forward their parameters, in order, to one cudaX call."""
    out = []
    for m in re.finditer(r"inline\s+static\s+[\w\s*]+?\b(hip\w+)\s*\(", text):
        close = _balanced(text, m.end() - 1)
        params = text[m.end() : close - 1]
        body = re.match(r"\s*\{\s*return\s+(?:hipCUDAErrorTohipError\s*\()?\s*(cuda\w+)\s*\(", text[close:])
        if not body:
            continue
        call = close + body.end() - 1
        end = _balanced(text, call)
        if not re.match(r"\s*\)?\s*;\s*\}", text[end:]):
            continue  # more than one statement
        forwarded = [_unwrap(a) for a in _split_args(text[call + 1 : end - 1])]
        if forwarded == _params(params):
            out.append(alias(m.group(1), body.group(1), "runtime API"))
    return out


def switch(text: str, function: str, case: str, value: str) -> list[tuple[str, str]]:
    """(case label, value) pairs of the switch in `function`: `case hipX: return cudaY;` and the like."""
    start = text.find(function)
    if start < 0:
        return []
    body = text[start : text.find("\n}", start)]
    return re.findall(rf"case\s+({case})\s*:\s*(?:\w+\s*=|return)\s*({value})\s*;", body)
