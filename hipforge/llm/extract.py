"""Pull the code out of a model's answer: fenced blocks, several of them, prose around, truncation."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from hipforge import pyast

_ALIASES: dict[str, frozenset[str]] = {
    "python": frozenset({"python", "py", "python3", "py3"}),
    "cpp": frozenset({"cpp", "c++", "cxx", "cc", "c", "hip", "cuda", "cu", "h", "hpp"}),
}
# What the pipeline asks for by default: a KernelBench candidate module, or a device kernel.
_DEFAULT_MARKER = {"python": "class ModelNew", "cpp": "__global__"}
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*?)[ \t]*$")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_CODE_START = {
    "python": re.compile(
        r"^(import |from \S+ import |class |def |async def |@|#|if __name__|[A-Za-z_][\w.]* *(=|\())"
    ),
    "cpp": re.compile(
        r"^(#include|#define|#pragma|template *<|__global__|__device__|extern |static |namespace |"
        r"using |struct |typedef |(void|int|float|auto|torch::Tensor) )"
    ),
}


@dataclass(frozen=True)
class _Candidate:
    body: str
    tag: str  # the fence's language word, "" when untagged or outside any fence
    fenced: bool  # inside a closed fence, or an open one that named its language


def _family(language: str) -> str:
    language = language.lower()
    return next((name for name, words in _ALIASES.items() if language in words), language)


def _blocks(text: str) -> list[_Candidate]:
    """Fenced blocks and the stretches of text between them, in order."""
    found: list[_Candidate] = []
    lines = text.split("\n")
    outside: list[str] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            outside.append(lines[i])
            i += 1
            continue
        found.append(_Candidate("\n".join(outside), "", False))
        outside = []
        fence, tag = opening["fence"], (opening["info"].split() or [""])[0].lower()
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            closing = _FENCE.match(lines[i])
            # A closing fence repeats the opening character at least as many times and names nothing.
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"]
            ):
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        found.append(_Candidate(textwrap.dedent("\n".join(body)), tag, closed or bool(tag)))
    found.append(_Candidate("\n".join(outside), "", False))
    return [c for c in found if c.body.strip()]


def _python_ok(code: str) -> bool:
    """Parses, and is more than a lone name or string (a word of prose parses as a Name)."""
    try:
        tree = pyast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(
        not (isinstance(s, ast.Expr) and isinstance(s.value, (ast.Name, ast.Constant))) for s in tree.body
    )


def _looks_like_code(code: str, family: str) -> bool:
    if family == "python":
        return _python_ok(code)
    return bool(re.search(r"[;{}]\s*$", code, re.MULTILINE))


def _trim_prose(code: str, family: str, marker: str | None) -> str:
    """Cut prose before the first code-looking line and trailing prose paragraphs after the code."""
    start = _CODE_START.get(family)
    lines = code.split("\n")
    if start is not None:
        first = next((i for i, line in enumerate(lines) if start.match(line)), 0)
        lines = lines[first:]
    code = "\n".join(lines).strip()
    if family == "python" and not _python_ok(code):
        # Drop whole trailing paragraphs only while that makes it parse and keeps the marker: a
        # genuine syntax error must reach the verifier, not be silently cut away.
        paragraphs = re.split(r"\n[ \t]*\n(?=\S)", code)
        for end in range(len(paragraphs) - 1, 0, -1):
            head = "\n\n".join(paragraphs[:end]).strip()
            if _python_ok(head) and (marker is None or marker not in code or marker in head):
                return head
    elif family == "cpp":
        ends = [i for i, line in enumerate(code.split("\n")) if re.search(r"([;}]|#endif.*)\s*$", line)]
        if ends:
            code = "\n".join(code.split("\n")[: ends[-1] + 1])
    return code


def extract_code(text: str, language: str = "python", marker: str | None = None) -> str:
    """The code the answer means, or "" when there is none.

    Among fenced blocks (and, failing those, the bare text) it prefers, in order: the one holding
    `marker` (default "class ModelNew" for python, "__global__" for cpp/hip), a properly fenced one,
    one tagged with the requested language or untagged, one that looks like code, the longest.
    """
    family = _family(language)
    marker = marker if marker is not None else _DEFAULT_MARKER.get(family)
    # Reasoning models think aloud first; drafts in there are not the answer.
    text = _THINK.sub("", text.replace("\r\n", "\n"))
    candidates = _blocks(text)
    if not candidates:
        return ""

    def rank(c: _Candidate) -> tuple[bool, bool, bool, bool, int]:
        tag_ok = _family(c.tag) == family if c.tag else True
        return (
            bool(marker) and marker in c.body,
            c.fenced,
            tag_ok,
            _looks_like_code(c.body, family),
            len(c.body),
        )

    best = max(candidates, key=rank)
    return best.body.strip() if best.fenced else _trim_prose(best.body, family, marker)
