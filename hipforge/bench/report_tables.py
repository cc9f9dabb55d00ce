"""A report as markdown: per-level scores, the seed's table beside ours, and the change since last time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hipforge.bench.report import LOOSE, STRICT, fast_column
from hipforge.bench.scoring import FAST_P
from hipforge.plots import CPU_SPEEDUP_CAVEAT

Row = dict[str, Any]

# DESIGN.md §1: the seed (MI350X, KernelBench, Qwen2.5-Coder-14B), base / SFT / RL, and what torch.compile
# gets on an H100 from KernelBench's stored baselines. Shares of all tasks; None where the seed gives none.
SEED: dict[int, dict[str, tuple[float | None, float | None, float | None]]] = {
    1: {"compiled": (0.10, 0.48, 0.71), "correct": (0.05, 0.17, 0.33), "fast_0_5": (None, None, 0.06),
        "fast_0_8": (None, None, 0.03), "fast_1": (None, None, 0.01), "geomean_eager": (None, None, 0.130)},
    2: {"compiled": (0.08, 0.63, 0.83), "correct": (0.06, 0.13, 0.60), "fast_0_5": (None, None, 0.54),
        "fast_0_8": (None, None, 0.17), "fast_1": (None, None, 0.0), "geomean_eager": (None, None, 0.639)},
    3: {"compiled": (0.05, 0.58, 0.62), "correct": (0.03, 0.16, 0.20), "fast_0_5": (None, None, 0.10),
        "fast_0_8": (None, None, 0.0), "fast_1": (None, None, 0.0), "geomean_eager": (None, None, 0.361)},
}
TORCH_COMPILE_H100 = {1: (1.17, 0.43), 2: (1.36, 0.81), 3: (1.26, 0.70)}  # geomean over eager, share faster


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def levels_markdown(levels: Sequence[Row]) -> str:
    """One row per level and tolerance: compile/correct rates, fast_p over eager, both geomeans."""
    fast = " | ".join(f"fast_{p:g}" for p in FAST_P)
    lines = [f"| level | fp32 tol | tasks | compiled | correct | {fast} | geomean vs eager | geomean vs compile |",
             "|" + "---|" * (7 + len(FAST_P))]
    for r in levels:
        cells = " | ".join(fmt(r[fast_column(p)]) for p in FAST_P)
        geomeans = f"{fmt(r['geomean_eager'], 3)} | {fmt(r['geomean_compiled'], 3)}"
        lines.append(f"| L{r['level']} | {r['tolerance']:g} | {r['tasks']} | {fmt(r['compiled'])} | "
                     f"{fmt(r['correct'])} | {cells} | {geomeans} |")
    return "\n".join(lines)


def _backend(rows: Sequence[Row], backend: str | None) -> str | None:
    """The backend given, else the one stored rows name (report_levels has it; fresh level_rows do not)."""
    return backend or next((r["backend"] for r in rows if r.get("backend")), None)


def _speed(metric: str) -> bool:
    return metric.startswith(("fast_", "geomean"))


def seed_markdown(levels: Sequence[Row], label: str, backend: str | None = None) -> str:
    """Ours at both tolerances beside the seed's base / SFT / RL numbers (MI350X), per level. A cpu backend's
    speeds are fiber-emulated rankings: only its compile and correct rates go beside the seed's."""
    cpu = _backend(levels, backend) == "cpu"
    ours = {(r["level"], r["tolerance"]): r for r in levels}
    lines = [f"| level | metric | {label} (1e-2) | {label} (1e-4) | seed base | seed SFT | seed RL |",
             "|---|---|---|---|---|---|---|"]
    for level in sorted({r["level"] for r in levels}):
        for metric, seed in SEED.get(level, {}).items():
            if cpu and _speed(metric):
                continue
            digits = 3 if metric.startswith("geomean") else 2
            mine = [fmt(ours[(level, tol)][metric], digits) if (level, tol) in ours else "-" for tol in (LOOSE, STRICT)]
            label = "fast_" + metric[5:].replace("_", ".") if metric.startswith("fast_") else metric
            lines.append(f"| L{level} | {label} | {' | '.join(mine)} | {' | '.join(fmt(v, digits) for v in seed)} |")
        if level in TORCH_COMPILE_H100 and not cpu:
            geo, faster = TORCH_COMPILE_H100[level]
            lines.append(f"| L{level} | torch.compile on H100 | geomean {geo:.2f}, faster on {faster:.0%} | | | | |")
    note = f"\n\nfast_p and geomeans are not set beside the seed's GPU times: {CPU_SPEEDUP_CAVEAT}." if cpu else ""
    return "\n".join(lines) + note


def change(previous: float | None, now: float | None, digits: int = 2) -> str:
    if previous is None or now is None:
        return f"{fmt(previous, digits)} → {fmt(now, digits)}"
    return f"{previous:.{digits}f} → {now:.{digits}f} ({now - previous:+.{digits}f})"


def comparison_markdown(previous: Sequence[Row], current: Sequence[Row], backend: str | None = None) -> str:
    """Each level and tolerance of this report against the previous one of the same model, task set and backend
    (store.reports.previous_levels); a cpu backend's speed changes are said to be changes of a ranking."""
    if not previous:
        return "no previous report of this model on this task set"
    before = {(r["level"], r["tolerance"]): r for r in previous}
    lines = ["| level | fp32 tol | tasks | compiled | correct | fast_1 | geomean vs eager |", "|---" * 7 + "|"]
    for r in current:
        old = before.get((r["level"], r["tolerance"]))
        if old is None:
            lines.append(f"| L{r['level']} | {r['tolerance']:g} | new level | | | | |")
            continue
        lines.append(f"| L{r['level']} | {r['tolerance']:g} | {old['tasks']} → {r['tasks']} | "
                     f"{change(old['compiled'], r['compiled'])} | {change(old['correct'], r['correct'])} | "
                     f"{change(old['fast_1'], r['fast_1'])} | {change(old['geomean_eager'], r['geomean_eager'], 3)} |")
    cpu = _backend([*current, *previous], backend) == "cpu"
    return "\n".join(lines) + (f"\n\nfast_1 and geomean on the cpu backend: {CPU_SPEEDUP_CAVEAT}." if cpu else "")


GPU_TABLE = "README.md, section \"Training on one H200\""


def checkpoint_note(model: str, preset: str | None) -> str | None:
    """What a checkpoint's scores stand for: the embedded preset's are a tiny model trained for seconds on CPU,
    which exercises the pipeline and says nothing of the method; its measured numbers are elsewhere."""
    from hipforge.bench.models import CHECKPOINT_PREFIX

    if not model.startswith(CHECKPOINT_PREFIX):
        return None
    if preset == "embedded":
        return (f"{model} was trained with the embedded preset (a tiny Qwen2 from scratch, seconds of SFT and GRPO "
                f"on CPU): these are the embedded preset's scores, a check that the pipeline runs, not the "
                f"method's result. The method measured on a GPU: {GPU_TABLE}.")
    trained = f"the {preset} preset" if preset else "a preset it did not record"
    return f"{model} was trained with {trained}; the measured GPU table: {GPU_TABLE}."


def model_label(model: str, preset: str | None) -> str:
    """The model's column label in the tables beside the seed's: an embedded checkpoint says so."""
    from hipforge.bench.models import CHECKPOINT_PREFIX

    return f"{model} (embedded preset)" if model.startswith(CHECKPOINT_PREFIX) and preset == "embedded" else model


def measured_line(level: dict) -> str:
    """Where and how a report was measured, from its stored rows."""
    protocol = level.get("protocol") or "not recorded"
    return (f"measured on {level['backend']} {level.get('arch') or ''}".rstrip()
            + f", {level.get('size') or '?'} size, protocol {protocol}")
