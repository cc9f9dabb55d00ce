"""Controlled corruptions of a verified kernel: the failed attempts of multi-turn SFT records.

Each corruption is a mistake a kernel writer makes (a missing semicolon, an undeclared name, operands
swapped, an intermediate returned instead of the result) applied to the HIP source string of the module,
and names the verdict it should earn. The corpus builder runs every corrupted
attempt through the executor and keeps it only when the verdict is the one claimed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Corruption:
    name: str
    expected: str  # the verdict the executor must give: compile_error | incorrect
    source: str  # the corrupted candidate


_HIP = re.compile(r'HIP_SOURCE = r"""(.*?)"""', re.DOTALL)
_STATEMENT = re.compile(r"^(\s*const float (v\d+) = )(.+);$", re.MULTILINE)
_SWAP = re.compile(r"\(([A-Za-z_]\w*) ([-/]) ([A-Za-z_]\w*)\)")
_RESULT = re.compile(r"^(\s*(?:return |out\[[^\]]+\] = ))(v\d+);$", re.MULTILINE)
_FUNCTION = re.compile(r"__(?:device|global)__")


def _in_device_code(source: str, edit: Callable[[str], str | None]) -> str | None:
    """The source with ``edit`` applied to its HIP source string (None: no HIP source, or the edit found no place)."""
    match = _HIP.search(source)
    if match is None:
        return None
    code = edit(match.group(1))
    return None if code is None else source[: match.start(1)] + code + source[match.end(1):]


def _missing_semicolon(code: str) -> str | None:
    match = _STATEMENT.search(code)
    return None if match is None else code[: match.end() - 1] + code[match.end():]


def _undeclared_name(code: str) -> str | None:
    """The output written through a name the kernel never declared (``output`` for ``out``)."""
    return re.sub(r"\bout\[", "output[", code, count=1) if re.search(r"\bout\[", code) else None


def _device_bodies(code: str) -> list[tuple[int, int]]:
    """[start, end) of every __device__ / __global__ function body (host code sizes grids: not a math slip)."""
    spans = []
    for match in _FUNCTION.finditer(code):
        start = code.find("{", match.end())
        depth, i = 1, start + 1
        while start >= 0 and i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        if start >= 0 and depth == 0:
            spans.append((start, i))
    return spans


def _swapped_operands(code: str) -> str | None:
    """The first subtraction or division of two names in device code with its operands the other way round."""
    for start, end in _device_bodies(code):
        for match in _SWAP.finditer(code, start, end):
            a, op, b = match.groups()
            if a != b:
                return code[: match.start()] + f"({b} {op} {a})" + code[match.end():]
    return None


def _returned_intermediate(code: str) -> str | None:
    """A function returns (or stores) its first intermediate value instead of its result."""
    for result in _RESULT.finditer(code):
        starts = [m.start() for m in _FUNCTION.finditer(code, 0, result.start())]
        first = _STATEMENT.search(code, starts[-1] if starts else 0, result.start())
        if first is not None and first.group(2) != result.group(2):
            return code[: result.start()] + result.group(1) + first.group(2) + ";" + code[result.end():]
    return None


EDITS: tuple[tuple[str, str, Callable[[str], str | None]], ...] = (
    ("missing_semicolon", "compile_error", _missing_semicolon),
    ("undeclared_name", "compile_error", _undeclared_name),
    ("swapped_operands", "incorrect", _swapped_operands),
    ("returned_intermediate", "incorrect", _returned_intermediate),
)


def corruptions(source: str) -> list[Corruption]:
    """Every corruption that applies to this kernel and changes it, in EDITS order."""
    out = []
    for name, expected, edit in EDITS:
        changed = _in_device_code(source, edit)
        if changed is not None and changed != source:
            out.append(Corruption(name, expected, changed))
    return out
