"""Profiler signals without a GPU: ncu and rocprofv3 parsers on recorded samples, the summary and its
bottleneck label, the estimate, peaks, the roofline plot, the lazy check in the reward, the evolvers' hints."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from hipforge.agents.base import AgentTask, Candidate
from hipforge.agents.evolver.llm import LLMEvolver
from hipforge.agents.evolver.offline import CHOICES, FAVOURED, evolve, mutate
from hipforge.agents.prompts import EXAMPLE_KERNEL, EXAMPLE_TASK
from hipforge.bench.plots_roofline import RooflinePoint, roofline_by_level, roofline_plot
from hipforge.execution.profile import ncu, rocprof
from hipforge.execution.profile.estimate import estimate
from hipforge.execution.profile.lazy import is_lazy, reject_lazy
from hipforge.execution.profile.peaks import Peaks, datasheet, device_peaks
from hipforge.execution.profile.signals import bottleneck, custom_kernel_names, summarize
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from hipforge.llm import LLMClient, LLMRequest, OfflineProvider
from hipforge.train.reward import RewardRule
from hipforge.translate import GenParams
from tests.corpus import entries
from tests.verifiers import ScriptedVerifier

SAMPLES = Path(__file__).parent / "profile_samples"
PEAKS = Peaks("test device", bandwidth=4.0e12, flops=60.0e12, source="test")
PNG = b"\x89PNG"


def test_ncu_raw_csv_gives_kernels_in_base_units_and_tells_ours_from_aten() -> None:
    kernels = ncu.parse((SAMPLES / "ncu_raw.csv").read_text(), {"bias_act_kernel"})
    assert [k.custom for k in kernels] == [False, True, False]
    gemm, ours, fill = kernels
    assert gemm.duration_ns == pytest.approx(1_843_200.0) and gemm.dram_bytes == pytest.approx(52_428_800)
    assert gemm.flops == pytest.approx(2 * 4_294_967_296) and gemm.stall == "math_pipe_throttle"
    assert ours.flops == pytest.approx(8_388_608) and ours.stall == "long_scoreboard"
    assert ours.dram_pct == pytest.approx(85.02) and ours.occupancy_pct == pytest.approx(81.33)
    assert fill.stall == "lg_throttle"
    scaled = (SAMPLES / "ncu_raw.csv").read_text().replace('"nsecond"', '"usecond"')
    assert ncu.parse(scaled, set())[0].duration_ns == pytest.approx(1_843_200.0 * 1e3)


def test_ncu_parse_fails_clearly_without_a_table() -> None:
    with pytest.raises(ValueError, match="no ncu CSV table"):
        ncu.parse("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n", set())


def test_ncu_command_profiles_only_the_marked_forward_without_clock_control() -> None:
    argv = ncu.command(["python", "-m", "x"], "/tmp/log.csv")
    assert argv[argv.index("--clock-control") + 1] == "none" and argv[argv.index("--profile-from-start") + 1] == "off"
    assert argv[argv.index("--page") + 1] == "raw" and argv[-3:] == ["python", "-m", "x"]
    assert all(m in argv[argv.index("--metrics") + 1] for m in (ncu.DURATION, ncu.DRAM_BYTES, ncu.OCCUPANCY))


def test_only_metrics_the_gpu_lists_are_requested() -> None:
    query = ("Device NVIDIA H200 (GH100)\n------\nMetric Name    Metric Description\n"
             "dram__bytes    # of bytes accessed in DRAM\ngpu__time_duration    total duration in nanoseconds\n"
             "smsp__average_warps_issue_stalled_barrier_per_issue_active    stalled on a barrier\n")
    assert ncu.supported(query) == [ncu.DURATION, ncu.DRAM_BYTES, ncu.STALL_METRIC.format("barrier")]
    with pytest.raises(ValueError, match="is a supported GPU visible"):
        ncu.supported("No supported devices found.")


def test_summary_weights_by_time_and_labels_the_bottleneck() -> None:
    kernels = ncu.parse((SAMPLES / "ncu_raw.csv").read_text(), {"bias_act_kernel"})
    found = summarize(kernels, PEAKS, "ncu")
    total = 1_843_200.0 + 16_448.0 + 8_736.0
    assert found.coverage == pytest.approx(16_448.0 / total)
    assert found.bandwidth_share == pytest.approx((52_428_800 + 67_108_864 + 33_554_432) / (total * 1e-9) / 4.0e12)
    assert found.stall == "math_pipe_throttle" and found.bottleneck == "low-coverage" and not found.estimate
    ours_only = summarize([k for k in kernels if k.custom], PEAKS, "ncu")
    assert ours_only.coverage == 1.0 and ours_only.bottleneck == "memory-bound"
    assert "coverage 100%" in ours_only.line()
    with pytest.raises(ValueError, match="no kernel was profiled"):
        summarize([], PEAKS, "ncu")


@pytest.mark.parametrize(("coverage", "bandwidth", "flops", "mean_us", "label"), [
    (0.1, 0.9, 0.1, 100.0, "low-coverage"),
    (0.9, 0.02, 0.01, 3.0, "launch-bound"),
    (0.9, 0.02, 0.01, 300.0, "memory-bound"),  # long kernels far from both roofs: still the memory side
    (None, 0.7, 0.2, None, "memory-bound"),
    (1.0, 0.3, 0.8, 50.0, "compute-bound"),
])
def test_bottleneck_labels(coverage: float | None, bandwidth: float, flops: float, mean_us: float | None,
                           label: str) -> None:
    assert bottleneck(coverage, bandwidth, flops, mean_us) == label


def test_rocprof_trace_is_cut_to_the_marked_forward() -> None:
    window = rocprof.marker_window((SAMPLES / "rocprof_marker_api_trace.csv").read_text())
    trace = (SAMPLES / "rocprof_kernel_trace.csv").read_text()
    kernels = rocprof.parse_trace(trace, {"bias_act_kernel"}, window)
    assert [(k.custom, k.duration_ns) for k in kernels] == [(False, 900_000.0), (True, 20_000.0)]
    assert len(rocprof.parse_trace(trace, set())) == 4
    stats = rocprof.parse_stats((SAMPLES / "rocprof_kernel_stats.csv").read_text())
    assert stats["Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1_SN_1LDSB0_APM1"] == 900_000.0
    with pytest.raises(ValueError, match="no roctx range"):
        rocprof.marker_window((SAMPLES / "rocprof_marker_api_trace.csv").read_text(), "other")
    assert rocprof.command(["python"], "/o")[:3] == ["rocprofv3", "--kernel-trace", "--marker-trace"]


def test_custom_kernel_names_come_from_the_global_functions() -> None:
    source = next(e for e in entries() if e.name == "linear_relu_hip").candidate_source
    assert {"bias_act_kernel", "unary_kernel"} <= custom_kernel_names(source)
    templated = "template <int V> __global__ void __launch_bounds__(256) tiled(float* x) {}"
    assert custom_kernel_names(templated) == {"tiled"}


def test_estimate_is_labelled_and_checks_its_runtime() -> None:
    found = estimate(flops=6e9, bytes_moved=4e6, runtime_ms=1.0, peaks=PEAKS, coverage=0.95, launches=2)
    assert found.estimate and found.flop_share == pytest.approx(0.1) and found.bandwidth_share == pytest.approx(1e-3)
    assert found.bottleneck == "compute-bound"
    assert estimate(0, 4e3, 0.004, PEAKS, coverage=1.0, launches=1).bottleneck == "launch-bound"
    assert estimate(6e9, 4e6, None, PEAKS, coverage=0.2).bandwidth_share is None
    with pytest.raises(ValueError, match="runtime must be positive"):
        estimate(1.0, 1.0, 0.0, PEAKS)


def test_peaks_are_measured_once_and_cached(tmp_path: Path) -> None:
    first = device_peaks("cpu", tmp_path, copy_mb=8, matmul_n=128, repeats=2)
    assert first.source == "measured" and first.bandwidth > 1e6 and first.flops > 1e6
    assert device_peaks("cpu", tmp_path, copy_mb=8, matmul_n=128) == first and (tmp_path / "peaks.json").exists()
    assert datasheet("NVIDIA H200").source == "datasheet: H200" and datasheet("AMD Instinct MI300X").ridge > 10
    with pytest.raises(KeyError, match="no datasheet peaks"):
        datasheet("a toaster")


def test_roofline_plots_one_png_per_level() -> None:
    points = [RooflinePoint("gemm", "1", 2e9, 12e6, 0.5, estimate=False), RooflinePoint("relu", "1", 0, 8e6, 0.01),
              RooflinePoint("linear_gelu", "2", 1e9, 8e6, 0.4)]
    plots = roofline_by_level(points, PEAKS)
    assert sorted(plots) == ["1", "2"] and all(png.startswith(PNG) for png in plots.values())
    with pytest.raises(ValueError, match="no point"):
        roofline_plot(points[1:2], PEAKS, "elementwise only")


def _correct(speedup: float) -> EvalResult:
    timing = Timing(1.0, 1.0, 1.0, 0.0, 1)
    return EvalResult(Verdict.CORRECT, "ok", runtime=timing, speedup_eager=speedup)


def test_the_reward_rejects_lazy_candidates_only_on_a_measured_coverage() -> None:
    assert is_lazy(0.1, 0.98) and is_lazy(0.1, 1.002) and not is_lazy(0.1, 1.4) and not is_lazy(0.8, 0.9)
    with pytest.raises(ValueError, match="share of forward time"):
        is_lazy(1.5, 1.0)
    rule = RewardRule(coverage_weight=0.5, reject=reject_lazy)
    lazy = _correct(0.98)
    assert rule(lazy) == pytest.approx(0.98) and rule(lazy, coverage=0.1) == 0.0
    assert rule(_correct(1.2), coverage=0.1) == pytest.approx(1.2 * 0.55)  # fast enough: kept, scaled by coverage


def test_mutations_favour_the_fields_that_address_the_bottleneck() -> None:
    def changed(favour: tuple[str, ...]) -> int:
        rng, hits = random.Random(0), 0
        for _ in range(200):
            child = mutate(GenParams(), rng, favour=favour)
            hits += any(getattr(child, f) != getattr(GenParams(), f) for f in FAVOURED["memory-bound"])
        return hits

    assert changed(FAVOURED["memory-bound"]) > 170 > changed(()) and set(FAVOURED["compute-bound"]) <= set(CHOICES)


def test_only_the_choices_a_tasks_code_depends_on_are_mutated() -> None:
    """A relu has no GEMM tile, epilogue or engine: a mutation of those would regenerate its parent."""
    from hipforge.agents.evolver.offline import live_choices, offline_generate
    from hipforge.agents.prompts import EXAMPLE_TASK

    relu = AgentTask("t", "relu", EXAMPLE_TASK)
    live = live_choices(relu, offline_generate, GenParams(), offline_generate(relu, GenParams()).source)
    assert {"block_size", "vector_width"} <= set(live) and not {"gemm_tile", "gemm_engine", "gemm_epilogue",
                                                                "conv_epilogue", "split_k", "fast_math"} & set(live)
    rng = random.Random(0)
    for _ in range(50):
        child = mutate(GenParams(), rng, live=live)
        assert {f for f in CHOICES if getattr(child, f) != getattr(GenParams(), f)} <= set(live)


def test_evolve_asks_for_the_parents_bottleneck() -> None:
    asked: list[str] = []

    def generate(task: AgentTask, params: GenParams) -> Candidate:
        return Candidate(f"# {params}", "test", params=params.to_dict())

    def diagnose(trial: object) -> str:
        asked.append(trial.candidate.source)  # type: ignore[attr-defined]
        return "memory-bound"

    run = evolve(AgentTask("t", "t", ""), generate, lambda c, g: _correct(1.0), budget=5, diagnose=diagnose)
    assert asked and asked[0] == f"# {GenParams()}" and len(run.trials) == 5


def test_the_llm_evolver_shows_the_parents_profile() -> None:
    seen: list[LLMRequest] = []

    def answer(request: LLMRequest) -> str:
        seen.append(request)
        return "no code"

    found = estimate(1e6, 4e9, 1.5, PEAKS, coverage=0.9, launches=1)
    evolver = LLMEvolver(LLMClient(OfflineProvider(answer, model="scripted")), budget=1,
                         diagnose=lambda node: found)
    evolver.evolve(AgentTask("t", "relu", EXAMPLE_TASK), (Candidate(EXAMPLE_KERNEL, "seed"), _correct(1.0)),
                   ScriptedVerifier(Verdict.CORRECT))
    prompt = seen[0].turns()[-1].content
    assert "Profile of the parent kernel: memory-bound (estimate" in prompt and "float4" in prompt


def test_the_diagnoser_profiles_each_correct_kernel_once_and_survives_failures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hipforge.execution.config import EvalConfig
    from hipforge.execution.profile import diagnose
    from hipforge.execution.profile.run import ProfileError

    calls: list[tuple[str, float | None]] = []

    def fake(source: str, task: str, cfg: EvalConfig, peaks: Peaks, *, runtime_ms: float | None,
             tool: str | None) -> object:
        calls.append((source, runtime_ms))
        if "broken" in source:
            raise ProfileError("ncu exited with status 1")
        return estimate(6e9, 4e6, runtime_ms, peaks, coverage=0.95)

    monkeypatch.setattr(diagnose, "profile_candidate", fake)
    doctor = diagnose.Diagnoser("task", EvalConfig(), PEAKS, tool=None)

    class Trial:
        def __init__(self, source: str, result: EvalResult) -> None:
            self.candidate, self.result = Candidate(source, "test"), result

    assert doctor.for_trial(Trial("a", _correct(1.0))) == "compute-bound"
    assert doctor.for_node(Trial("a", _correct(1.0))) is not None and calls == [("a", 1.0)]
    assert doctor.for_trial(Trial("b", EvalResult(Verdict.INCORRECT, "wrong"))) is None and len(calls) == 1
    assert doctor.for_trial(Trial("broken", _correct(1.0))) is None and "status 1" in doctor.errors[0]


def test_the_ncu_path_runs_ncu_around_the_target_and_reads_its_log(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in ncu on PATH: lists metrics for --query-metrics, else writes the recorded sample as its log."""
    from hipforge.execution.config import EvalConfig
    from hipforge.execution.profile import run
    from hipforge.execution.profile.detect import profiler_for

    seen, listing, fake = tmp_path / "argv.txt", tmp_path / "metrics.txt", tmp_path / "ncu"
    listing.write_text("Metric Name  Description\n" + "\n".join(f"{m.split('.')[0]}  what" for m in ncu.METRICS))
    fake.write_text(f"""#!/bin/sh
if [ "$1" = "--query-metrics" ]; then cat {listing}; exit 0; fi
echo "$@" > {seen}
while [ "$1" != "--log-file" ]; do shift; done
cp {SAMPLES / "ncu_raw.csv"} "$2"
""")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    run._ncu_metrics.cache_clear()
    assert profiler_for("cuda") == "ncu" and profiler_for("cpu") is None
    source = "__global__ void bias_act_kernel(const float* x) {}"
    found = run.profile_candidate(source, "task", EvalConfig(backend="cuda", arch="sm_90"), PEAKS)
    run._ncu_metrics.cache_clear()
    assert found.source == "ncu" and found.coverage == pytest.approx(16_448.0 / (1_843_200.0 + 16_448.0 + 8_736.0))
    argv = seen.read_text()
    assert "hipforge.execution.profile.target" in argv and "--clock-control none" in argv and ncu.DURATION in argv
