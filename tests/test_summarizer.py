"""The offline failure summarizer: normalization, clustering, ranking and the prompt text."""

from __future__ import annotations

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Candidate
from hipforge.agents.judge.offline import OfflinePlausibilityFilter
from hipforge.agents.summarizer.offline import (
    Failure,
    failures_from_warehouse,
    key_line,
    normalize,
    render_lessons,
    summarize,
)
from hipforge.execution.verdict import EvalResult, Verdict
from tests.corpus import entries

CLANG = "/tmp/hipforge/build/{h}/candidate.hip:{line}:{col}: error: use of undeclared identifier '{name}'\n" \
        "1 error generated when compiling for gfx950."
FAILURES = [
    *[Failure("compile_error", "build failed", CLANG.format(h=h, line=ln, col=c, name=n)) for h, ln, c, n in
      [("a1", 14, 31, "scale_factor"), ("b2", 9, 5, "cudaMalloc"), ("c3", 40, 12, "TILE_SIZE"), ("d4", 3, 1, "BLOCK")]],
    Failure("compile_error", "build failed", 'candidate.cu(22): error: identifier "blockDimx" is undefined'),
    Failure("compile_error", "build failed", "/tmp/b/k.hip:7:1: error: expected ';' after struct"),
    Failure("compile_error", "build failed", "/tmp/b/k.hip:12:9: error: no matching function for call to 'fmaxf'"),
    *[Failure("incorrect", f"seed {s}: max abs error {e}, atol=0.0001, rtol=0.0001") for s, e in
      [(3, 0.0213), (0, 1.5), (1, 0.00042)]],
    Failure("incorrect", "seed 0: output (16, 32) torch.float32, reference (16,) torch.float32"),
    Failure("runtime_error", "evaluation failed: RuntimeError: HIP error: an illegal memory access was encountered"),
    Failure("timeout", "check phase did not finish within 120 s (the sandbox and everything it started were killed)"),
    Failure("hacked", "line 84: replaces torch.cuda.synchronize", hack_check="timing_patch"),
    *[Failure("runtime_error", f"evaluation failed: AttributeError: module 'hipforge_{m}' has no attribute '{a}'")
      for m, a in [("k1", "forward_cuda"), ("k2", "run")]],
]


def test_key_line_and_normalization() -> None:
    line = key_line(FAILURES[0])
    assert line.endswith("use of undeclared identifier 'scale_factor'")
    assert normalize(line) == normalize(key_line(FAILURES[1])) == "error: use of undeclared identifier 'x'"
    assert normalize("seed 3: max abs error 2.5e-03, atol=1e-4") == "seed n: max abs error n, atol=n"
    assert normalize('k.cu(22): error: identifier "blockDimx" is undefined') == "error: identifier 'x' is undefined"
    assert normalize("at 0x7f3a in row_sum_kernel") == "at n in id"
    traceback = Failure("runtime_error", "crashed", "Traceback (most recent call last):\n  File x\nValueError: bad")
    assert key_line(traceback) == "ValueError: bad"


def test_summarize_clusters_and_ranks_by_frequency() -> None:
    lessons = summarize(FAILURES)
    assert [(lesson.title, lesson.count) for lesson in lessons[:3]] == [
        ("Undeclared identifier or missing include", 5),  # clang and nvcc wordings share the pattern
        ("Results outside tolerance", 3),
        ("Recurring runtime error: attributeerror: module 'x' has no attribute 'x'", 2),
    ]
    assert all(a.count >= b.count for a, b in zip(lessons, lessons[1:], strict=False))
    assert sum(lesson.count for lesson in lessons) == len(FAILURES)
    by_title = {lesson.title: lesson for lesson in lessons}
    undeclared = by_title["Undeclared identifier or missing include"]
    assert undeclared.verdict == "compile_error" and len(undeclared.examples) == 3
    assert "hip_runtime.h" in undeclared.advice
    assert by_title["Output shape or count mismatch"].count == 1
    assert by_title["Rejected as a hack (timing_patch)"].advice.startswith("Don't game the evaluator: never touch time")
    assert {"C++ syntax error in the HIP source", "Type mismatch in a call", "Out-of-bounds memory access",
            "Kernel hangs or runs too long"} <= set(by_title)
    generic = by_title["Recurring runtime error: attributeerror: module 'x' has no attribute 'x'"]
    assert "has no attribute 'forward_cuda'" in generic.advice  # the fallback quotes the typical message


def test_unknown_messages_cluster_by_token_similarity() -> None:
    messages = ["k.hip:4:9: error: invalid operands to binary expression ('float *' and 'float')",
                "k.hip:8:2: error: invalid operands to binary expression ('int4' and 'int')",
                "k.cpp:8:2: error: invalid operands of types 'float*' and 'float' to binary 'operator+'",
                "k.hip:1:1: error: 'auto' not allowed in function prototype"]
    lessons = summarize([Failure("compile_error", "failed", m) for m in messages])
    assert [lesson.count for lesson in lessons] == [3, 1]  # clang's and gcc's wordings join
    assert lessons[0].examples[0] == messages[0] and lessons[0].title.startswith("Recurring compile error: invalid")
    assert [lesson.count for lesson in summarize([Failure("compile_error", "failed", m) for m in messages],
                                                 similarity=0.99)] == [2, 1, 1]


def test_plausibility_reasons_and_evaluation_rows_are_failures_too() -> None:
    judge = OfflinePlausibilityFilter().judge
    reasons = [r for e in entries("honest")[:2] for r in judge(f"```python\n{e.candidate_source}```").reasons]
    assert summarize([Failure("rejected", r) for r in reasons])[0].title == "Stray markdown fences or prose"
    row = {"verdict": "compile_error", "message": "build failed", "hack_check": None,
           "detail": '{"compile_log": "x.hip:1:2: error: unknown type name \'hipStream\'"}'}
    assert summarize([row])[0].title == "Undeclared identifier or missing include"


def test_render_lessons_fits_the_budget() -> None:
    lessons = summarize(FAILURES)
    text = render_lessons(lessons, max_chars=4000)
    assert text.startswith("Lessons from earlier failed kernels")
    first = "\n1. Undeclared identifier or missing include (5 failures, compile_error): Include <hip/hip_runtime.h>"
    assert first in text
    assert 'Seen: "error: use of undeclared identifier' in text  # location and build path dropped
    assert "/tmp/" not in text and f"\n{len(lessons)}. " in text
    short = render_lessons(lessons, max_chars=600)
    assert len(short) <= 600 and "\n1. " in short and f"\n{len(lessons)}. " not in short
    assert render_lessons(lessons, max_chars=40) == "" and render_lessons([]) == ""


def test_failures_from_warehouse(warehouse) -> None:
    assert failures_from_warehouse(warehouse) == []
    archive = KernelArchive(warehouse)
    log = "/tmp/k.hip:3:7: error: use of undeclared identifier 'n'"
    archive.record("t1", Candidate("a", "x"), EvalResult(Verdict.COMPILE_ERROR, "build failed", compile_log=log), "r")
    archive.record("t2", Candidate("b", "x"), EvalResult(Verdict.INCORRECT, "seed 1: max abs error 3"), "r")
    archive.record("t2", Candidate("c", "x"), EvalResult(Verdict.CORRECT, "correct on all seeds"), "r")
    failures = failures_from_warehouse(warehouse)
    assert {(f.verdict, f.log) for f in failures} == {("compile_error", log), ("incorrect", "")}
    assert [f.verdict for f in failures_from_warehouse(warehouse, task_id="t2")] == ["incorrect"]
    assert len(failures_from_warehouse(warehouse, limit=1)) == 1
