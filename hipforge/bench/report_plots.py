"""The seed's report figures: compile-rate bars per level and model, and fast_p curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hipforge.bench.plots_roofline import RooflinePoint, roofline_by_level
from hipforge.bench.report import LOOSE, STRICT, TaskOutcome, fast_column
from hipforge.bench.scoring import FAST_P
from hipforge.execution.config import EvalConfig
from hipforge.execution.profile.peaks import device_peaks
from hipforge.execution.verdict import Verdict
from hipforge.plots import measured_on, new_figure, to_png
from hipforge.tasks.reference_check import work_profile

Levels = Mapping[str, Sequence[dict[str, Any]]]  # model -> its report's level rows


def report_measured(cfg: EvalConfig, speedups: bool = False) -> str:
    """What a report's plot measured on: backend, device, the inputs' size and the protocol. The cpu backend
    runs the tasks' smoke-scale sources (hipforge.bench.report.load_report_tasks), GPUs their full size."""
    device = f"host CPU, wave {cfg.wavefront}" if cfg.backend == "cpu" else cfg.arch
    size = "smoke-scale inputs" if cfg.backend == "cpu" else "full-size inputs"
    return measured_on(cfg.backend, device, f"{size}, {len(cfg.seeds)} seeds, {cfg.timed_trials} timed trials",
                       speedups)


def compile_rate_bars(by_model: Levels, tolerance: float = LOOSE, *, measured: str) -> bytes:
    """Grouped bars: compile rate (solid) and correct rate (hatched) per level, one colour per model; `measured`
    (report_measured) names the backend the rows were measured on: one plot never mixes backends."""
    models = list(by_model)
    levels = sorted({r["level"] for rows in by_model.values() for r in rows})
    width = 0.8 / max(len(models), 1)
    fig, ax = new_figure(max(6.5, 1.6 * len(levels) + 2), 3.6)  # the width its subtitle needs
    for i, model in enumerate(models):
        rows = {r["level"]: r for r in by_model[model] if r["tolerance"] == tolerance}
        xs = [j + i * width for j in range(len(levels))]
        color = f"C{i % 10}"
        ax.bar(xs, [rows[lv]["compiled"] if lv in rows else 0 for lv in levels], width, color=color, alpha=0.45,
               label=f"{model} compiled")
        ax.bar(xs, [rows[lv]["correct"] if lv in rows else 0 for lv in levels], width, color=color, hatch="//",
               edgecolor="white", label=f"{model} correct")
    ax.set_xticks([j + width * (len(models) - 1) / 2 for j in range(len(levels))], [f"L{lv}" for lv in levels])
    ax.set_ylim(0, 1)
    ax.set_ylabel(f"share of tasks (fp32 tol {tolerance:g})")
    ax.set_title(f"compile and correct rate per level\n{measured}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return to_png(fig)


def fast_p_curves(by_model: Levels, *, measured: str) -> bytes:
    """fast_p over eager against p, one line per model and level; solid at 1e-2, dashed at 1e-4. `measured`
    (report_measured with speedups) names the backend, and a cpu backend's says its speedups only rank."""
    fig, ax = new_figure(6.5, 3.6)
    for i, (model, rows) in enumerate(by_model.items()):
        for r in rows:
            style = "-" if r["tolerance"] == LOOSE else "--"
            label = f"{model} L{r['level']}" if r["tolerance"] == LOOSE else None
            ax.plot(FAST_P, [r[fast_column(p)] for p in FAST_P], style, marker="o", markersize=3,
                    color=f"C{(i * 3 + r['level']) % 10}", label=label)
    ax.set_xlabel("p (speedup over PyTorch eager)")
    ax.set_ylabel("fast_p (share of all tasks)")
    ax.set_ylim(0, 1)
    ax.set_title(f"fast_p (solid: fp32 tol {LOOSE:g}, dashed: {STRICT:g})\n{measured}", fontsize=9)
    ax.legend(fontsize=7)
    return to_png(fig)


def roofline_images(outcomes: list[TaskOutcome], cfg: EvalConfig) -> dict[str, bytes]:
    """Each correct kernel as a roofline point per level, under this device's measured roofs: the task's FLOPs
    and least bytes at the size that ran, over the measured median (an estimate, not hardware counters)."""
    device = "cpu" if cfg.backend == "cpu" else "cuda"  # ROCm builds of torch name their GPUs cuda too
    points = []
    for outcome in outcomes:
        result = outcome.result
        if result is None or result.verdict != Verdict.CORRECT or not result.runtime:
            continue
        work = work_profile(outcome.task.eval_source(device))  # device cpu is the cpu backend: the smoke size ran
        if work.get("flops") is not None and work.get("bytes"):
            points.append(RooflinePoint(outcome.task.name.rsplit("/", 1)[-1][:28], str(outcome.task.level),
                                        work["flops"], work["bytes"], result.runtime.median_ms))
    if not points:
        return {}
    sizes = {"copy_mb": 256, "matmul_n": 2048} if device == "cpu" else {}  # a CPU's peaks in seconds, not minutes
    return roofline_by_level(points, device_peaks(device, **sizes), f"roofline on {device}",
                             subtitle=report_measured(cfg, speedups=True))
