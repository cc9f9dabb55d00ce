"""Lazy optimization on the cpu backend, end to end without a profiler: a candidate whose HIP kernel only
applies the ReLU while ATen runs the GEMM is correct and no faster, its estimated coverage is low, and the
reward with the coverage term rejects it; a candidate doing all the work in its kernel is fully covered."""

from __future__ import annotations

import re

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.execution.profile.lazy import reject_lazy
from hipforge.execution.profile.peaks import datasheet
from hipforge.execution.profile.run import profile_candidate
from hipforge.execution.profile.signals import LOW_COVERAGE
from hipforge.execution.profile.target import work_split
from hipforge.execution.verdict import Verdict
from hipforge.train.reward import RewardRule
from scripts.profile_gpu import lazy_candidate
from tests.corpus import entries

CORPUS = {e.name: e for e in entries()}
FUSED = CORPUS["linear_relu_fused"]
# the GEMM must dominate the work for the split to say anything: KernelBench-like proportions, CPU-sized
SIZES = {"batch_size": 128, "in_features": 512, "out_features": 512}
TASK = FUSED.task_source
for name, value in SIZES.items():
    TASK = re.sub(rf"^{name} = .*$", f"{name} = {value}", TASK, flags=re.M)
LAZY = lazy_candidate()
PEAKS = datasheet("MI350X")  # the target device's roofs: coverage is the share our kernels would take there
CONFIG = EvalConfig(warmup=1, timed_trials=5, gate=False)  # the gfx950 gate is tested elsewhere


def test_a_lazy_candidate_is_correct_but_scored_down_by_its_estimated_coverage() -> None:
    result = evaluate(LAZY, TASK, CONFIG)
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.runtime is not None and result.speedup_eager is not None
    found = profile_candidate(LAZY, TASK, CONFIG, PEAKS, runtime_ms=result.runtime.median_ms, tool=None)
    assert found.estimate and "work share" in found.source
    assert found.coverage is not None and found.coverage < LOW_COVERAGE and found.bottleneck == "low-coverage"
    assert found.bandwidth_share is not None and found.flop_share is not None
    plain, with_coverage = RewardRule(), RewardRule(coverage_weight=0.5, reject=reject_lazy)
    if result.speedup_eager < 1.0:  # no faster than eager: lazy by definition, rejected
        assert plain(result) > 0.0 and with_coverage(result, found.coverage) == 0.0
    else:  # the cpu backend beat eager: kept, but with a smaller coverage term than a fully covered kernel
        assert with_coverage(result, found.coverage) < with_coverage(result, 1.0)


def test_kernels_doing_all_the_work_are_fully_covered() -> None:
    relu = CORPUS["relu"]
    honest = work_split(relu.candidate_source, relu.task_source, CONFIG)
    assert honest.custom_calls == 1 and not honest.aten and honest.coverage(PEAKS) == 1.0
    lazy = work_split(LAZY, TASK, CONFIG)
    assert lazy.custom_calls == 1 and lazy.task_flops == 2 * 128 * 512 * 512
    assert sum(f for f, _ in lazy.aten) == lazy.task_flops and lazy.coverage(PEAKS) < LOW_COVERAGE
