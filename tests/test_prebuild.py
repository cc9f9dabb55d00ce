"""The candidate's builds are made before device memory is held (hipforge.execution.prebuild_job): its module
is imported once in a sandboxed job of its own, then again, from the cache, in the candidate's job."""

from __future__ import annotations

import dataclasses
import secrets

from hipforge.execution.evaluate import evaluate
from hipforge.execution.verdict import Verdict
from tests.corpus import entries
from tests.test_trust_boundary import CONFIG, around

PREBUILD = dataclasses.replace(CONFIG, prebuild=True)


def _fresh_relu() -> tuple[str, str]:
    """The honest relu with a comment in its HIP source no build has seen, so that it needs a build."""
    entry = next(e for e in entries("honest") if e.name == "relu")
    marker = f"// {secrets.token_hex(8)}\n"
    source = entry.candidate_source.replace("#include", marker + "#include", 1)
    assert source != entry.candidate_source
    return source, entry.task_source


def test_the_builds_are_made_by_the_prebuild_and_once_per_source() -> None:
    source, task = _fresh_relu()
    first = evaluate(source, task, PREBUILD)
    assert first.verdict == Verdict.CORRECT, first.message
    assert first.integrity.get("prebuilt"), "the prebuild made no build"
    assert "cached=True" in first.compile_log  # the candidate's own import found it in the cache
    again = evaluate(source, task, PREBUILD)
    assert again.verdict == Verdict.CORRECT, again.message
    assert "prebuilt" not in again.integrity  # its marker says the builds are there


def test_a_write_that_only_the_prebuild_makes_is_an_escape() -> None:
    """The candidate's own job never writes, so only the prebuild's recorder can catch it."""
    prelude = (f"# {secrets.token_hex(8)}: a source no prebuild has seen\nimport inspect\n"
               "if any('prebuild_job' in f.filename for f in inspect.stack()):\n"
               "    ctypes.CDLL(None).open((os.getcwd() + '-beside').encode(), 0o101, 0o644)\n")
    result = around("relu", "return honest(self, x)", prelude=prelude, config=PREBUILD)
    assert result.verdict == Verdict.HACKED and result.hack_check == "sandbox_escape", result.message
    assert "-beside" in result.message


def test_a_build_that_fails_is_the_verdict_of_the_prebuild() -> None:
    source, task = _fresh_relu()
    broken = source.replace("#include", "this is not C++;\n#include", 1)
    result = evaluate(broken, task, PREBUILD)
    assert result.verdict == Verdict.COMPILE_ERROR, result.message
    assert result.compile_log
