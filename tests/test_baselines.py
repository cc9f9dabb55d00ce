"""Reference timings are measured once per task and machine, then reused by later evaluations."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from tests.corpus import entries

RELU = next(e for e in entries("honest") if e.name == "relu")


def test_second_evaluation_of_a_task_reuses_its_reference_timing() -> None:
    # the sandbox user must reach the cache: not under pytest's 0700 tmp_path
    tmp_path = Path(tempfile.mkdtemp(prefix="hipforge-baselines-"))
    tmp_path.chmod(0o755)
    try:
        _check_reuse(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _check_reuse(tmp_path: Path) -> None:
    config = EvalConfig(timed_trials=5, gate=False, cache_dir=str(tmp_path))
    first = evaluate(RELU.candidate_source, RELU.task_source, config)
    second = evaluate(RELU.candidate_source, RELU.task_source, config)
    assert first.verdict.value == second.verdict.value == "correct", (first.message, second.message)
    assert "baseline cache" not in first.message and "baseline cache" in second.message
    assert second.ref_eager == first.ref_eager and second.runtime is not None
    assert second.speedup_eager is not None

    other_protocol = EvalConfig(timed_trials=6, gate=False, cache_dir=str(tmp_path))
    third = evaluate(RELU.candidate_source, RELU.task_source, other_protocol)
    assert "baseline cache" not in third.message  # a different timing protocol is timed afresh
