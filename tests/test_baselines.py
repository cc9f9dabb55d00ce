"""Reference timings are measured once per task and machine, then reused by later evaluations."""

from __future__ import annotations

import secrets

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from tests.corpus import entries

RELU = next(e for e in entries("honest") if e.name == "relu")


def test_second_evaluation_of_a_task_reuses_its_reference_timing() -> None:
    # a task no baseline has seen (a comment of its own), with a kernel the build cache already has
    task = f"{RELU.task_source}\n# {secrets.token_hex(8)}\n"
    config = EvalConfig(timed_trials=5, gate=False)
    first = evaluate(RELU.candidate_source, task, config)
    second = evaluate(RELU.candidate_source, task, config)
    assert first.verdict.value == second.verdict.value == "correct", (first.message, second.message)
    assert "baseline cache" not in first.message and "baseline cache" in second.message
    assert second.ref_eager == first.ref_eager and second.runtime is not None
    assert second.speedup_eager is not None

    other_protocol = EvalConfig(timed_trials=6, gate=False)
    third = evaluate(RELU.candidate_source, task, other_protocol)
    assert "baseline cache" not in third.message  # a different timing protocol is timed afresh
