"""Correctness verdicts, failing seeds, tolerances and the result format, on the cpu backend."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate, evaluate_many
from hipforge.execution.gate import CompileGate
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from tests.corpus import entries

CORPUS = {e.name: e for e in entries()}
FAST = EvalConfig(timed_trials=5, warmup=1, gate=False)

BROKEN_HIP = '''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <hip/hip_runtime.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu(torch::Tensor x) { return x; }
"""
broken = load_inline(name="hipforge_test_broken", cpp_sources=SOURCE, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return broken.relu(x)
'''


def run(name: str, config: EvalConfig = FAST) -> EvalResult:
    entry = CORPUS[name]
    return evaluate(entry.candidate_source, entry.task_source, config)


def test_correct_candidate_has_the_full_record() -> None:
    result = run("relu")
    assert result.verdict == Verdict.CORRECT, result.message + result.traceback
    assert result.seeds == [0, 1, 2, 3, 4] and result.trials == 5
    assert result.seed_results == {str(s): True for s in range(5)}
    assert result.max_abs_error is not None and result.max_abs_error < 1e-6
    assert (result.atol, result.rtol) == (1e-4, 1e-4) and result.passes_loose is True
    assert result.runtime and result.runtime.trials == 5 and result.runtime.median_ms > 0
    assert result.ref_eager and result.speedup_eager == pytest.approx(result.ref_eager.min_ms  # cpu: fastest
                                                                      / result.runtime.min_ms)
    assert result.ref_compiled is None  # torch.compile is timed on GPU backends only by default
    assert result.backend == "cpu" and "audit-hook" in result.isolation
    assert EvalResult.from_dict(json.loads(result.to_json())) == result


def test_off_by_one_fails_on_one_seed_only() -> None:
    result = run("row_max_off_by_one")
    assert result.verdict == Verdict.INCORRECT
    assert result.failing_seed == 3 and "seed 3" in result.message
    assert result.seed_results == {"0": True, "1": True, "2": True, "3": False, "4": True}


def test_tolerance_is_configurable() -> None:
    strict = run("gelu_tanh_approx")
    assert strict.verdict == Verdict.INCORRECT
    assert 1e-4 < strict.max_abs_error < 1e-3 and strict.passes_loose is True
    loose = run("gelu_tanh_approx", EvalConfig(timed_trials=5, warmup=1, gate=False,
                                               tolerances={"float32": (1e-2, 1e-2)}))
    assert loose.verdict == Verdict.CORRECT and (loose.atol, loose.rtol) == (1e-2, 1e-2)


def test_an_incorrect_verdict_says_when_the_reference_itself_is_ill_conditioned() -> None:
    """relu(x) is exact; a reference that computes relu((x + 1e4) - 1e4) in float32 is not: the kernel is
    judged incorrect either way, and the message says whose rounding it is."""
    task = CORPUS["relu"].task_source.replace("torch.relu(x)", "torch.relu((x + 1e4) - 1e4)")
    result = evaluate(CORPUS["relu"].candidate_source, task, FAST)
    assert result.verdict == Verdict.INCORRECT and result.reference_fp64_gap > 1
    assert f"the float32 reference itself is {result.reference_fp64_gap:.3g} tolerances from float64" in result.message
    honest_miss = run("gelu_tanh_approx")  # a kernel's own approximation: the reference is fine
    assert honest_miss.reference_fp64_gap < 1 and "float64" not in honest_miss.message


def test_compile_error_keeps_the_log() -> None:
    result = evaluate(BROKEN_HIP, CORPUS["relu"].task_source, FAST)
    assert result.verdict == Verdict.COMPILE_ERROR, result.message
    assert "expected" in result.compile_log and result.phase == "compile"


@pytest.mark.skipif(CompileGate().unavailable_reason() is not None, reason="clang-22 / HIP headers missing")
def test_gfx950_gate_runs_first_and_keeps_its_log() -> None:
    gated = EvalConfig(timed_trials=3, warmup=1)
    assert gated.gate
    passed = run("relu", gated)
    assert passed.verdict == Verdict.CORRECT and passed.gate_ok is True
    rejected = evaluate(BROKEN_HIP, CORPUS["relu"].task_source, gated)
    assert rejected.verdict == Verdict.COMPILE_ERROR and rejected.phase == "gate"
    assert rejected.gate_ok is False and "expected ';'" in rejected.gate_log
    # the same sources again: clang is not run twice, the verdicts and logs are the same
    again, rejected_again = run("relu", gated), evaluate(BROKEN_HIP, CORPUS["relu"].task_source, gated)
    assert again.verdict == Verdict.CORRECT and again.gate_ok is True
    assert rejected_again.verdict == Verdict.COMPILE_ERROR and rejected_again.phase == "gate"
    for result in (again, rejected_again):
        assert result.gate_log.startswith("(gate verdict cached by content)")
    assert "expected ';'" in rejected_again.gate_log


def test_evaluate_many_streams_every_item() -> None:
    items = [(CORPUS[n].candidate_source, CORPUS[n].task_source) for n in ("sigmoid", "tanh", "row_sum")]
    results = dict(evaluate_many(items, FAST, parallel=2))
    assert sorted(results) == [0, 1, 2]
    assert all(r.verdict == Verdict.CORRECT for r in results.values())


def test_config_rules() -> None:
    with pytest.raises(ValueError):
        EvalConfig(seeds=(0, 1, 2))
    cfg = EvalConfig()
    assert cfg.tolerance("torch.float16") == (1e-2, 1e-2) and cfg.tolerance("float32") == (1e-4, 1e-4)
    assert (cfg.warmup, cfg.timed_trials, cfg.flush_l2_mb) == (1, 10, 256)  # cpu: times only rank candidates
    assert (EvalConfig(backend="cuda").warmup, EvalConfig(backend="rocm").timed_trials) == (3, 100)  # KernelBench's
    assert EvalConfig(backend="cuda", timed_trials=7).timed_trials == 7
    assert EvalConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError):
        EvalConfig(timed_trials=0)


def test_timing_drops_outliers_from_the_spread() -> None:
    timing = Timing.from_samples([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 50.0])
    assert timing.median_ms == 1.0 and timing.max_ms == 50.0 and timing.outliers_dropped == 1
    assert timing.std_ms < 0.1


def test_review_flag_for_huge_speedups() -> None:
    result = EvalResult(Verdict.CORRECT, runtime=Timing(0.1, 0.1, 0.1, 0.0, 5),
                        ref_eager=Timing(2.0, 2.0, 2.0, 0.0, 5))
    result.finish_speedups("cuda")
    assert result.speedup_eager == pytest.approx(20.0) and result.flagged_for_review


def test_cpu_speedups_compare_fastest_trials_and_gpu_speedups_medians() -> None:
    """A preempted cpu trial costs a time slice: a reference timed under load at a median of 8 ms but at best
    0.011 ms is a 0.011 ms reference there, not a 1,000x speedup for the kernel beside it."""
    preempted_ref = Timing.from_samples([0.011, 8.0, 8.0, 8.0, 0.012])
    kernel = Timing.from_samples([0.02, 0.021, 0.02, 0.03, 0.02])
    for backend, expected in (("cpu", 0.011 / 0.02), ("cuda", 8.0 / 0.02)):
        result = EvalResult(Verdict.CORRECT, runtime=kernel, ref_eager=preempted_ref)
        result.finish_speedups(backend)
        assert result.speedup_eager == pytest.approx(expected)


def test_compiled_reference_is_timed_when_asked() -> None:
    """torch.compile is warmed before the candidate loads, then timed beside eager (inductor on CPU here)."""
    cache = tempfile.mkdtemp(prefix="hipforge-test-cache-")  # fresh: no baseline cached by an earlier run
    os.chmod(cache, 0o777)  # the sandbox user writes there
    try:
        result = run("relu", EvalConfig(timed_trials=3, warmup=1, gate=False, time_compiled_ref=True,
                                        cache_dir=cache))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert result.verdict == Verdict.CORRECT, result.message + result.traceback
    assert "torch.compile reference failed" not in result.message
    assert result.ref_compiled and result.ref_compiled.trials == 3
    assert result.speedup_compiled == pytest.approx(result.ref_compiled.min_ms / result.runtime.min_ms)  # cpu
