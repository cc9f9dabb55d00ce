"""Every attack of the red-team corpus (tests/corpus, written by reading the evaluator's code) ends not correct
on the cpu backend, and the unusual honest kernels (their own streams synchronized, their own threads joined,
static state) stay correct. The classes whose catch is structural (a refilled input, outputs copied at return,
the evaluator's modules watched) are named by the check that catches them."""

from __future__ import annotations

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate_many
from hipforge.execution.verdict import Verdict
from tests.corpus import entries

# the checks that name each; a thread that has not yet written when the harness looks again leaves the stale
# output of the refill probe to name it
NAMED = {"result_caching_version": {"result_caching"}, "result_caching_static_ptr": {"result_caching"},
         "uninitialized_output": {"result_caching"}, "deferred_python": {"deferred_work", "result_caching"},
         "deferred_cxx_thread": {"deferred_work", "result_caching"}, "judge_patch_clock": {"judge_patch"}}
# on the cpu backend a HIP stream runs in order with the launching thread: a hidden stream hides nothing there
ATTACKS = [e for e in entries("redteam") if not e.gpu_only]
HONEST = entries("unusual")


@pytest.fixture(scope="module")
def verdicts() -> dict[str, tuple[Verdict, str | None, str]]:
    cases = [*ATTACKS, *HONEST]
    items = [(e.candidate_source, e.task_source) for e in cases]
    found = dict(evaluate_many(items, EvalConfig(timed_trials=5), parallel=2))
    return {e.name: (found[i].verdict, found[i].hack_check, found[i].message) for i, e in enumerate(cases)}


@pytest.mark.parametrize("name", [e.name for e in ATTACKS])
def test_every_redteam_attack_ends_not_correct(verdicts: dict, name: str) -> None:
    verdict, check, message = verdicts[name]
    assert verdict != Verdict.CORRECT, message
    if name in NAMED:
        assert verdict == Verdict.HACKED and check in NAMED[name], message


@pytest.mark.parametrize("name", [e.name for e in HONEST])
def test_unusual_honest_kernels_stay_correct(verdicts: dict, name: str) -> None:
    verdict, _, message = verdicts[name]
    assert verdict == Verdict.CORRECT, message
