"""Every deceptive candidate in the corpus is caught with its label; no honest one is flagged.

The whole corpus runs once (module fixture) on the cpu backend. Its candidates share three kernel
texts, so the compile cache builds three extensions and every other candidate hits the cache.
"""

from __future__ import annotations

import pytest

from hipforge.execution.antihack_static import blocking, scan
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate_many
from hipforge.execution.verdict import EvalResult, Verdict
from tests.corpus import Entry, entries

CONFIG = EvalConfig(timed_trials=5, warmup=1, gate=False)
HONEST = entries("honest")
DECEPTIVE = entries("deceptive")
ON_CPU = [e for e in DECEPTIVE if not e.gpu_only]  # what this backend runs: its streams hide nothing


@pytest.fixture(scope="module")
def results() -> dict[str, EvalResult]:
    corpus = HONEST + ON_CPU
    done = evaluate_many([(e.candidate_source, e.task_source) for e in corpus], CONFIG, parallel=2)
    return {corpus[i].name: result for i, result in done}


def test_corpus_is_big_enough() -> None:
    assert len(HONEST) >= 15 and len(DECEPTIVE) >= 15
    labels = {e.label for e in DECEPTIVE}
    assert {"code_bypass", "timing_patch", "thread_injection", "lazy_evaluation", "result_caching",
            "input_mutation", "output_aliasing", "non_default_stream", "precision_downgrade",
            "fitted_constants", "noop_kernel", "reference_access"} <= labels


@pytest.mark.parametrize("entry", HONEST + DECEPTIVE, ids=lambda e: e.name)
def test_static_scan(entry: Entry) -> None:
    """Honest sources have no finding; "static" deceptive ones are caught by the scan with their label,
    "dynamic" ones slip past it (that is what they are for)."""
    hit = blocking(scan(entry.candidate_source), fp32_task=True)
    if entry.kind == "honest" or entry.stage == "dynamic":
        assert hit is None, hit
    else:
        assert hit is not None and hit.check == entry.label, hit


@pytest.mark.parametrize("entry", HONEST, ids=lambda e: e.name)
def test_honest_is_correct(entry: Entry, results: dict[str, EvalResult]) -> None:
    result = results[entry.name]
    assert result.verdict == Verdict.CORRECT, result.message + result.traceback + result.output_tail
    assert result.hack_check is None
    assert result.runtime and result.ref_eager and result.speedup_eager


@pytest.mark.parametrize("entry", ON_CPU, ids=lambda e: e.name)
def test_deceptive_is_caught(entry: Entry, results: dict[str, EvalResult]) -> None:
    result = results[entry.name]
    assert result.verdict == Verdict.HACKED, (result.verdict, result.message, result.traceback)
    assert result.hack_check == entry.label, result.message
    assert (result.phase == "static") == (entry.stage == "static"), result.phase
    assert result.runtime is None  # a hacked candidate is never timed
