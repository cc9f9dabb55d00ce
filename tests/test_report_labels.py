"""What the report's plots and tables say they measured (backend, device, size, protocol, the cpu caveat), that
they set side by side only reports measured alike, and which report the asset page opens on."""

from __future__ import annotations

from typing import Any

import pytest

from hipforge.bench import report_plots
from hipforge.bench.models import OFFLINE, checkpoint_key
from hipforge.bench.report import LOOSE, STRICT, fast_column
from hipforge.bench.report_store import meaningful_report, opening_order
from hipforge.bench.report_tables import comparison_markdown, seed_markdown
from hipforge.bench.scoring import FAST_P
from hipforge.execution.config import EvalConfig
from hipforge.plots import CPU_SPEEDUP_CAVEAT, measured_on
from hipforge.store import Warehouse
from hipforge.store.reports import latest_levels, previous_levels, save_report
from tests import stored

CPU = "cpu backend, host CPU, wave 64 (smoke-scale inputs, 5 seeds, 10 timed trials)"
CUDA = "cuda backend, sm_90 (full-size inputs, 5 seeds, 100 timed trials)"


def _levels(correct: float = 0.5) -> list[dict[str, Any]]:
    return [{"level": 1, "tolerance": tol, "tasks": 2, "compiled": 1.0, "correct": correct,
             **{fast_column(p): correct / 2 for p in FAST_P}, "geomean_eager": 1.2, "geomean_compiled": None}
            for tol in (STRICT, LOOSE)]


@pytest.fixture
def titles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The title of every figure the report's plots draw (rendered to nothing)."""
    drawn: list[str] = []

    def capture(fig: Any) -> bytes:
        drawn.append(fig.axes[0].get_title())
        return b""

    monkeypatch.setattr(report_plots, "to_png", capture)
    return drawn


def test_report_plots_name_backend_device_size_and_protocol(titles: list[str]) -> None:
    for cfg in (EvalConfig(backend="cpu"), EvalConfig(backend="cuda", arch="sm_90")):
        report_plots.compile_rate_bars({OFFLINE: _levels()}, measured=report_plots.report_measured(cfg))
        report_plots.fast_p_curves({OFFLINE: _levels()}, measured=report_plots.report_measured(cfg, speedups=True))
    cpu_rates, cpu_fast_p, cuda_rates, cuda_fast_p = titles
    assert CPU in cpu_rates and CPU in cpu_fast_p and CUDA in cuda_rates and CUDA in cuda_fast_p
    # cpu speedups only rank kernels, and say so; compile and correct rates are no speedups
    assert CPU_SPEEDUP_CAVEAT in cpu_fast_p and CPU_SPEEDUP_CAVEAT not in cpu_rates
    assert CPU_SPEEDUP_CAVEAT not in cuda_fast_p
    assert measured_on("rocm", "gfx950", speedups=True) == "rocm backend, gfx950"


TASK = {"task_id": "t", "task_name": "relu", "level": 1, "kernel_id": None, "eval_id": None, "declined": None,
        "verdict": "correct", "compiled": True, "correct_strict": True, "correct_loose": True, "max_abs_err": 0.0,
        "max_rel_err": 0.0, "speedup_eager": 1.1, "speedup_compiled": None}


def test_plots_and_diffs_set_side_by_side_only_reports_measured_alike(warehouse: Warehouse) -> None:
    save_report(warehouse, "r-cpu", OFFLINE, "reference", "cpu", "gfx950", [], _levels(0.9))
    save_report(warehouse, "r-gpu", "gemini", "reference", "cuda", "sm_90", [TASK], _levels(0.1))
    assert set(latest_levels(warehouse)) == {OFFLINE, "gemini"}
    assert set(latest_levels(warehouse, backend="cuda", task_set="reference")) == {"gemini"}
    assert set(latest_levels(warehouse, backend="cuda", arch="sm_100")) == set()
    assert latest_levels(warehouse, backend="cpu", task_set="kernelbench") == {}
    # the latest report of a model on this backend, not its latest anywhere
    save_report(warehouse, "r-gpu-2", OFFLINE, "reference", "cuda", "sm_90", [], _levels(0.2))
    cpu = latest_levels(warehouse, backend="cpu")[OFFLINE]
    assert {r["run_id"] for r in cpu} == {"r-cpu"}
    # a diff: the previous report of the model on this backend, task set and arch
    save_report(warehouse, "r-gpu-b", "gemini", "reference", "cuda", "sm_100", [TASK], _levels(0.3))
    assert previous_levels(warehouse, "gemini", "reference", "cuda", "r-gpu-b", "sm_100") == []
    assert {r["run_id"] for r in previous_levels(warehouse, "gemini", "reference", "cuda", "r-gpu-b")} == {"r-gpu"}


def test_the_page_opens_on_the_newest_trained_checkpoint_not_the_embedded_zeros(warehouse: Warehouse) -> None:
    stored.checkpoint(warehouse, "tiny", hyperparameters={"preset": "embedded"})
    stored.checkpoint(warehouse, "old", hyperparameters={"preset": "seed"})
    stored.checkpoint(warehouse, "new", hyperparameters={"preset": "seed"})
    tiny, old, new = (checkpoint_key(c) for c in ("tiny", "old", "new"))
    # embedded first, then the other models, then trained checkpoints in their order: the newest last
    assert opening_order(warehouse, [tiny, old, OFFLINE, new]) == [tiny, OFFLINE, old, new]
    assert opening_order(warehouse, [OFFLINE, tiny]) == [tiny, OFFLINE]
    assert opening_order(Warehouse(warehouse.path.with_name("none.duckdb")), [tiny, OFFLINE]) == [OFFLINE, tiny]
    # the embedded checkpoint's report links the meaningful one among those reported
    assert meaningful_report(warehouse, [tiny, OFFLINE, new], tiny) is None  # nothing else is reported yet
    for run, model in (("r1", tiny), ("r2", OFFLINE)):
        save_report(warehouse, run, model, "reference", "cpu", "gfx950", [], _levels())
    assert meaningful_report(warehouse, [tiny, OFFLINE, new], tiny) == OFFLINE
    save_report(warehouse, "r3", new, "reference", "cpu", "gfx950", [], _levels())
    assert meaningful_report(warehouse, [tiny, OFFLINE, new], tiny) == new
    assert meaningful_report(warehouse, [tiny, OFFLINE, new], OFFLINE) is None  # only embedded zeros point away


def test_the_lessons_plot_names_the_backends_its_failures_were_judged_on(warehouse: Warehouse) -> None:
    from hip_assets.lessons.assets import failures_measured

    assert failures_measured(warehouse, 10) == "failed evaluations: none; judge rejections ran nowhere"
    rows = [{"eval_id": f"e{i}", "kernel_id": "k", "task_id": "t", "backend": backend, "arch": arch,
             "verdict": verdict, "message": "m"}
            for i, (backend, arch, verdict) in enumerate([("cpu", "gfx950", "incorrect"), ("cpu", "gfx950", "timeout"),
                                                          ("cuda", "sm_90", "compile_error"),
                                                          ("cuda", "sm_90", "correct")])]
    warehouse.insert("evaluations", rows, "run")
    assert failures_measured(warehouse, 10) == ("failed evaluations: 2 on cpu (host CPU), 1 on cuda (sm_90); "
                                                "judge rejections ran nowhere")


def test_cpu_speeds_are_never_set_beside_the_seeds_gpu_table() -> None:
    levels = [dict(r, level=lv) for lv in (1, 2) for r in _levels()]
    gpu = seed_markdown(levels, "ours", "cuda")
    assert "| L1 | geomean_eager |" in gpu and "torch.compile on H100" in gpu and CPU_SPEEDUP_CAVEAT not in gpu
    for cpu in (seed_markdown(levels, "ours", "cpu"), seed_markdown([dict(r, backend="cpu") for r in levels], "ours")):
        assert "| L1 | compiled |" in cpu and "| L2 | correct |" in cpu  # rates still go beside the seed's
        assert "geomean" not in cpu.split("\n\n")[0] and "fast_" not in cpu.split("\n\n")[0]
        assert "H100" not in cpu and cpu.endswith(CPU_SPEEDUP_CAVEAT + ".")
    # a diff of two cpu reports (stored rows name their backend) says its speed changes are a ranking's
    stored = [dict(r, backend="cpu") for r in levels]
    assert comparison_markdown(stored, levels).endswith(CPU_SPEEDUP_CAVEAT + ".")
    assert CPU_SPEEDUP_CAVEAT not in comparison_markdown(levels, levels, "rocm")
