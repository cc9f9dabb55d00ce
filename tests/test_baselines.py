"""Reference timings per task and machine, measured once and reused: on GPUs only (KernelBench's stored
baselines). A cpu speedup is timed round by round beside its candidate (tests/test_paired_timing.py)."""

from __future__ import annotations

from pathlib import Path

from hipforge.execution.baselines import BaselineCache
from hipforge.execution.config import EvalConfig
from tests.corpus import entries

RELU = next(e for e in entries("honest") if e.name == "relu")
TIMING = {"median_ms": 1.0, "min_ms": 0.9, "max_ms": 1.2, "std_ms": 0.1, "trials": 100}


def test_a_gpu_baseline_is_kept_per_task_and_timing_protocol(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path)
    gpu = EvalConfig(backend="cuda")
    key = cache.key(RELU.task_source, gpu)
    cache.put(key, {"verdict": "correct", "ref_eager": TIMING, "runtime": TIMING, "ref_compiled": None})
    assert cache.get(key) == {"ref_eager": TIMING}  # the reference's timings only
    assert cache.key(RELU.task_source, EvalConfig(backend="cuda", timed_trials=50)) != key
    assert cache.key(RELU.task_source + "\n# another task\n", gpu) != key


def test_an_evaluation_without_reference_timings_is_not_kept(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path)
    key = cache.key(RELU.task_source, EvalConfig(backend="cuda"))
    cache.put(key, {"verdict": "correct", "ref_eager": None})
    assert cache.get(key) is None
