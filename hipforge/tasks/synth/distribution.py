"""What the accepted synthetic tasks look like: operators used, output sizes, FLOPs and bytes, per mode."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence

from hipforge.plots import new_figure, to_png
from hipforge.tasks.reference_run import ReferenceRun
from hipforge.tasks.synth.screen import Outcome


def _accepted(outcomes: Sequence[Outcome]) -> list[tuple[Outcome, ReferenceRun]]:
    return [(o, o.result) for o in outcomes if isinstance(o.result, ReferenceRun)]


def _span(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{min(values):.3g} / {statistics.median(values):.3g} / {max(values):.3g}"


def distribution_table(outcomes: Sequence[Outcome]) -> str:
    """Markdown: per mode, min / median / max of output elements, GEMM/conv FLOPs and bytes moved."""
    lines = ["| mode | tasks | output elements (min/med/max) | FLOPs (min/med/max) | bytes moved (min/med/max) |",
             "|---|---|---|---|---|"]
    accepted = _accepted(outcomes)
    for mode in sorted({o.candidate.mode for o, _ in accepted}):
        runs = [run for o, run in accepted if o.candidate.mode == mode]
        numel = [float(math.prod(s)) for run in runs for s in run.full_shapes]
        flops = [float(run.flops) for run in runs if run.flops is not None]
        moved = [float(run.bytes_moved) for run in runs if run.bytes_moved is not None]
        lines.append(f"| {mode} | {len(runs)} | {_span(numel)} | {_span(flops)} | {_span(moved)} |")
    return "\n".join(lines)


def operator_table(outcomes: Sequence[Outcome]) -> str:
    """Markdown: how often each template operator appears in accepted compositions and specs."""
    used = Counter(op for o, _ in _accepted(outcomes) for op in dict.fromkeys(o.candidate.operators))
    rows = "\n".join(f"| {op} | {n} |" for op, n in used.most_common())
    return "| operator | tasks |\n|---|---|\n" + rows if rows else "no template operators used"


def cost_scatter(outcomes: Sequence[Outcome]) -> bytes | None:
    """PNG: bytes moved against FLOPs per task, coloured by mode (log-log; FLOP-free tasks sit at 1)."""
    points = [(o.candidate.mode, run.bytes_moved, max(run.flops or 0, 1)) for o, run in _accepted(outcomes)
              if run.bytes_moved]
    if not points:
        return None
    fig, ax = new_figure(7, 4.5)
    for mode in sorted({m for m, _, _ in points}):
        xs, ys = zip(*[(b, f) for m, b, f in points if m == mode], strict=True)
        ax.scatter(xs, ys, label=mode, alpha=0.75)
    ax.set(xscale="log", yscale="log", xlabel="bytes moved at full size", ylabel="GEMM/conv FLOPs (1 = none)",
           title="synthetic tasks: cost at full size\n(counted on torch's meta device, not timed on any backend)")
    ax.legend()
    return to_png(fig)
