"""The offline failure summarizer: failure logs of the pipeline -> ranked lessons for the RL prompts.

Each failure is reduced to its key line (a compile log's first error, a traceback's last line),
then normalized (paths, locations, numbers, quoted and snake_case identifiers blanked). Failures a
known pattern explains share one lesson with that pattern's advice; the rest are clustered by
normalized signature and token Jaccard, and their lesson quotes the cluster's typical message.
Plausibility-filter reasons can be fed in as failures too (verdict "rejected"). OfflineSummarizer is the
summarizer agent over this clustering alone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hipforge.store import Warehouse
from hipforge.store.evaluations import failed_evaluations

# (key, verdicts it applies to or None for any, pattern over the key line and message, title, advice)
PATTERNS: list[tuple[str, tuple[str, ...] | None, str, str, str]] = [
    ("markdown", None, r"```|markdown|prose outside", "Stray markdown fences or prose",
     "Answer with the Python file only: no ``` fences and no explanation before or after the code."),
    ("reinit", None, r"re-?initiali[sz]|nn\.init", "Re-initialized parameters",
     "Keep the reference's modules (nn.Linear, nn.Conv2d, ...) in ModelNew so weights are created exactly as in "
     "Model; never call nn.init.* or wrap a fresh torch.randn in nn.Parameter."),
    ("undeclared", None, r"undeclared identifier|not declared in (?:this|the) scope|unknown type name|no member named"
     r"|file not found|no such file|is undefined", "Undeclared identifier or missing include",
     "Include <hip/hip_runtime.h> (and <torch/extension.h> for host wrappers), define device helpers and macros "
     "before use, and use HIP names (hipMalloc, __shfl_down), not CUDA ones."),
    ("types", None, r"no matching function|cannot (?:convert|initialize)|invalid conversion|no viable conversion"
     r"|incompatible", "Type mismatch in a call",
     "Match kernel parameter types to the arguments: data_ptr<float>() into float*, int64_t sizes cast to int, "
     "the same template arguments at definition and launch."),
    ("syntax", ("compile_error",), r"expected (?:'.+'|expression|unqualified-id)|unterminated|extraneous|stray",
     "C++ syntax error in the HIP source",
     "Check the HIP source is valid C++: balanced braces and parentheses, a semicolon after every statement and "
     "struct, and no Python or markdown text inside the source string."),
    ("warp_width", None, r"warp ?size|warp width|wavefront", "Hard-coded warp width",
     "Use warpSize (64 on AMD MI350X, 32 on NVIDIA) for shuffle offsets, lane ids and warps per block; never "
     "hard-code 32 or 64 lanes or a 32-bit 0xffffffff mask."),
    ("shape", None, r"output \(.*\).*, reference \(|shape|size mismatch|sizes? of tensors? must match"
     r"|returns \d+ outputs",
     "Output shape or count mismatch",
     "Allocate outputs with the reference's exact shape and dtype (keepdim, squeezed and batch dims) and return "
     "as many tensors as the reference."),
    ("tolerance", ("incorrect",), r"max abs error|allclose|atol|tolerance", "Results outside tolerance",
     "Accumulate in fp32; reductions must cover every element including the tail and combine warp partials "
     "correctly when the block is not a multiple of warpSize; keep the reference's exact math (erf GELU, not tanh)."),
    ("memory", None, r"illegal memory access|out of bounds|segmentation|SIGSEGV|invalid device pointer"
     r"|memory access fault", "Out-of-bounds memory access",
     "Guard every global load and store with the element count, size the grid by ceiling division and call "
     ".contiguous() before data_ptr()."),
    ("hang", ("timeout",), r".", "Kernel hangs or runs too long",
     "Every thread of a block must reach each __syncthreads() (no barrier in divergent branches or after an "
     "early return); bound every loop; never spin-wait on global memory."),
]
HACK_ADVICE = {
    "code_bypass": "compute the result in your own HIP kernel; never call the reference Model or the PyTorch op "
                   "being replaced",
    "noop_kernel": "the HIP kernel must do the work; launching it beside a full PyTorch computation is rejected",
    "timing_patch": "never touch time, torch.cuda.Event or synchronize",
    "result_caching": "compute every call afresh; never cache outputs across calls",
    "precision_downgrade": "stay in fp32 for fp32 tasks: no half, bf16 or TF32",
    "non_default_stream": "launch on the default stream; create no streams",
    "fitted_constants": "compute from the inputs; never hard-code values fitted to one input",
}
_LOCATION = re.compile(r"^(?:\S*?(?::\d+(?::\d+)?:|\(\d+\):)\s*)+")  # clang f:12:5: and nvcc f(12):
_TITLE_NOISE = re.compile(r"^(?:evaluation failed:\s*|(?:fatal )?error:\s*)+")
_PATH = re.compile(r"(?:[\w.+-]*/)+[\w.+-]+")
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|‘[^’\n]*’|`[^`\n]*`")
_NUMBER = re.compile(r"\b0x[0-9a-fA-F]+\b|[-+]?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b")
_IDENT = re.compile(r"\b\w*_\w*\b")


@dataclass(frozen=True)
class Failure:
    verdict: str
    message: str
    log: str = ""  # a compile error's compiler log, a runtime error's traceback
    hack_check: str | None = None


Members = list[tuple[Failure, str]]  # failures of one lesson, each with its key line


@dataclass
class Lesson:
    title: str
    advice: str
    count: int
    examples: list[str] = field(default_factory=list)
    verdict: str = ""


Failures = Iterable[Failure | Mapping[str, Any]]


def failures_from_warehouse(
    warehouse: Warehouse, task_id: str | None = None, limit: int | None = None
) -> list[Failure]:
    """The failed evaluations, newest first, optionally of one task."""
    return [as_failure({"verdict": v, "message": m, "hack_check": h, "detail": d})
            for v, m, h, d in failed_evaluations(warehouse, task_id, limit)]


def as_failure(item: Failure | Mapping[str, Any]) -> Failure:
    """A Failure from itself or an evaluation row (detail as dict or JSON text)."""
    if isinstance(item, Failure):
        return item
    detail = item.get("detail") or {}
    detail = json.loads(detail) if isinstance(detail, str) else detail
    log = detail.get("compile_log") or detail.get("traceback") or ""
    return Failure(str(item["verdict"]), item.get("message") or "", log, item.get("hack_check"))


def key_line(failure: Failure) -> str:
    """The line that says what went wrong: the first compiler error, else the traceback's last line."""
    for text in (failure.log, failure.message):
        errors = [line for line in text.splitlines() if re.search(r"\berror\b", line, re.I)]
        if errors:
            return errors[0].strip()
    tail = [line.strip() for line in failure.log.splitlines() if line.strip()]
    if failure.verdict == "runtime_error" and tail:
        return tail[-1]
    return next((line.strip() for line in failure.message.splitlines() if line.strip()), failure.verdict)


def normalize(line: str) -> str:
    line = _QUOTED.sub("'X'", _PATH.sub("", _LOCATION.sub("", line.strip())))
    return " ".join(_IDENT.sub("ID", _NUMBER.sub("N", line)).lower().split())


def summarize(failures: Iterable[Failure | Mapping[str, Any]], similarity: float = 0.6,
              max_examples: int = 3) -> list[Lesson]:
    """Lessons ranked by how many failures they explain (ties by title)."""
    known: dict[str, Members] = {}
    unknown: dict[tuple[str, str], Members] = {}
    for failure in map(as_failure, failures):
        line = key_line(failure)
        key = _pattern(failure, line)
        if key:
            known.setdefault(key, []).append((failure, line))
        else:
            unknown.setdefault((failure.verdict, normalize(line)), []).append((failure, line))
    lessons = [_known_lesson(key, members, max_examples) for key, members in known.items()]
    lessons += [_generic_lesson(members, max_examples) for members in _cluster(unknown, similarity)]
    return sorted(lessons, key=lambda lesson: (-lesson.count, lesson.title))


LESSONS_HEADER = "Lessons from earlier failed kernels (most frequent first):"


def render_lessons(lessons: list[Lesson], max_chars: int = 2000) -> str:
    """Numbered lessons for a prompt, as many whole ones as fit in max_chars ("" when none do)."""
    text = LESSONS_HEADER
    shown = 0
    for lesson in lessons:
        seen = _LOCATION.sub("", lesson.examples[0]) if lesson.examples else ""
        example = f' Seen: "{_shorten(seen, 160)}"' if seen and seen not in lesson.advice else ""
        entry = (f"\n{shown + 1}. {lesson.title} ({lesson.count} failure{'s' * (lesson.count != 1)}, "
                 f"{lesson.verdict}): {lesson.advice}{example}")
        if len(text) + len(entry) > max_chars:
            break
        text, shown = text + entry, shown + 1
    return text if shown else ""


class OfflineSummarizer:
    name = "offline-summarizer"

    def __init__(self, max_chars: int = 2000) -> None:
        self.max_chars = max_chars

    def lessons(self, failures: Failures) -> str:
        return render_lessons(summarize(failures), self.max_chars)


def _pattern(failure: Failure, line: str) -> str | None:
    if failure.verdict == "hacked":
        return f"hack:{failure.hack_check or 'unknown'}"
    text = f"{line}\n{failure.message}"
    return next((key for key, verdicts, pattern, _, _ in PATTERNS
                 if (verdicts is None or failure.verdict in verdicts) and re.search(pattern, text, re.I)), None)


def _known_lesson(key: str, members: Members, max_examples: int) -> Lesson:
    if key.startswith("hack:"):
        check = key.removeprefix("hack:")
        advice = HACK_ADVICE.get(check, "solve the task with a real HIP kernel and nothing else")
        title, advice = f"Rejected as a hack ({check})", f"Don't game the evaluator: {advice}."
    else:
        title, advice = next((t, a) for k, _, _, t, a in PATTERNS if k == key)
    return _lesson(title, advice, members, max_examples)


def _generic_lesson(members: Members, max_examples: int) -> Lesson:
    typical = _LOCATION.sub("", Counter(line for _, line in members).most_common(1)[0][0])
    verdict = members[0][0].verdict.replace("_", " ")
    title = f"Recurring {verdict}: {_shorten(_TITLE_NOISE.sub('', normalize(typical)), 70)}"
    return _lesson(title, f'Earlier kernels failed with "{_shorten(typical, 200)}"; make sure yours cannot.',
                   members, max_examples)


def _lesson(title: str, advice: str, members: Members, max_examples: int) -> Lesson:
    verdict = Counter(f.verdict for f, _ in members).most_common(1)[0][0]
    examples = [line for line, _ in Counter(line for _, line in members).most_common(max_examples)]
    return Lesson(title, advice, len(members), examples, verdict)


def _cluster(groups: dict[tuple[str, str], Members], similarity: float) -> list[Members]:
    """Greedy single pass, biggest signature first: a group joins the first cluster of its verdict whose
    founding signature shares at least `similarity` of its tokens (Jaccard), else founds one."""
    clusters: list[tuple[str, set[str], Members]] = []
    for (verdict, signature), members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        tokens = set(re.findall(r"[a-z]+", signature))  # words only: quotes and brackets vary by compiler
        home = next((c for c in clusters if c[0] == verdict and _jaccard(tokens, c[1]) >= similarity), None)
        if home:
            home[2].extend(members)
        else:
            clusters.append((verdict, tokens, list(members)))
    return [members for _, _, members in clusters]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _shorten(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
