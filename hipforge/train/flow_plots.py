"""The training flow's plots as PNG bytes: the size sweep's held-out loss over steps, GRPO per step, and the
checkpoints' scores per evaluation split."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hipforge.plots import new_figure, to_png


def sweep_plot(runs: Sequence[dict[str, Any]], sft: dict[str, Any] | None = None) -> bytes:
    """Held-out loss against training steps, one line per size (and the chosen one's continued SFT)."""
    fig, ax = new_figure(6, 3.5)
    for run in runs:
        ax.plot([p[0] for p in run["curve"]], [p[2] for p in run["curve"]], marker="o", markersize=3,
                label=f"{run['size']} ({run['parameters'] / 1e6:.1f}M)")
    if sft and sft.get("curve"):
        offset = sft.get("step_offset", 0)
        ax.plot([offset + p[0] for p in sft["curve"]], [p[2] for p in sft["curve"]], marker="s", markersize=3,
                linestyle="--", label="chosen, continued SFT")
    ax.set_xlabel("SFT step")
    ax.set_ylabel("held-out loss (nats / kernel token)")
    ax.set_title("size sweep")
    ax.legend()
    return to_png(fig)


def grpo_plot(per_step: Sequence[dict[str, float]]) -> bytes | None:
    if not per_step:
        return None
    fig, ax = new_figure(6, 3.5)
    steps = list(range(1, len(per_step) + 1))
    for key, label in (("reward_mean", "mean reward"), ("correct_rate", "correct rate"),
                       ("nonzero_share", "non-zero rewards"), ("speedup_mean", "mean speedup (correct)")):
        ax.plot(steps, [s[key] for s in per_step], marker="o", markersize=3, label=label)
    mixed = [i + 1 for i, s in enumerate(per_step) if s["mixed_groups"]]
    if mixed:
        ax.scatter(mixed, [0] * len(mixed), marker="^", color="black", label="a group mixes correct and failed")
    ax.set_xlabel("GRPO step")
    ax.set_title("GRPO, per step")
    ax.legend(fontsize=7)
    return to_png(fig)


def eval_plot(rows: Sequence[dict[str, Any]]) -> bytes:
    """Correct and compiled rates of each checkpoint per split (greedy), with n under each split."""
    splits = sorted({r["split"] for r in rows})
    checkpoints = [c for c in ("base", "sft", "rl") if any(r["checkpoint"] == c for r in rows)]
    fig, ax = new_figure(7, 3.5)
    width = 0.8 / max(len(checkpoints), 1)
    for k, checkpoint in enumerate(checkpoints):
        mine = {r["split"]: r for r in rows if r["checkpoint"] == checkpoint}
        xs = [i + k * width for i in range(len(splits))]
        ax.bar(xs, [mine[s]["compiled"] if s in mine else 0 for s in splits], width, alpha=0.35,
               label=f"{checkpoint} compiled")
        ax.bar(xs, [mine[s]["correct"] if s in mine else 0 for s in splits], width, label=f"{checkpoint} correct")
    ns = {s: max((r["n"] for r in rows if r["split"] == s), default=0) for s in splits}
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(splits))], [f"{s}\n(n={ns[s]})" for s in splits])
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of tasks (greedy)")
    ax.legend(fontsize=7, ncol=3)
    return to_png(fig)
