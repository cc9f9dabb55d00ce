"""Scanning C++ source without parsing it: comments and literals masked out, brackets matched, top-level
commas split, and whether a position is inside a function body. Every helper works on masked text, so
brackets and keywords inside strings or comments never count."""

from __future__ import annotations

import re


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


def match_forward(m: str, i: int) -> int:
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


def split_top_level(text: str) -> list[str]:
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


def brace_kinds(m: str) -> list[tuple[int, bool]]:
    """(position, is_function_body-or-block) for every `{`, in order."""
    kinds = []
    for mo in re.finditer(r"\{", m):
        before = m[max(0, mo.start() - 200) : mo.start()]
        ns = re.search(r'(\bnamespace\b[\w\s:]*|\bextern\s*"[^"]*"\s*)$', before)
        kinds.append((mo.start(), ns is None))
    return kinds


def in_function(m: str, pos: int, kinds: list[tuple[int, bool]]) -> bool:
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
