"""A verdict as a person reads it in a terminal."""

from __future__ import annotations

from hipforge.execution.verdict import EvalResult, Timing


def _timing(label: str, timing: Timing | None) -> str | None:
    if timing is None:
        return None
    spread = f"min {timing.min_ms:.4f}, max {timing.max_ms:.4f}, std {timing.std_ms:.4f}"
    return f"  {label:<16} median {timing.median_ms:.4f} ms  ({spread}, {timing.trials} trials)"


def format_result(result: EvalResult, log_lines: int = 30) -> str:
    lines = [f"verdict: {result.verdict.value}  ({result.backend} {result.arch}, {result.seconds:.1f} s)"]
    if result.message:
        lines.append(f"  {result.message}")
    if result.hack_check:
        lines.append(f"  caught by: {result.hack_check}")
    if result.failing_seed is not None:
        lines.append(f"  failing seed: {result.failing_seed}  max abs err {result.max_abs_error:.3g}"
                     f"  max rel err {result.max_rel_error:.3g}  (atol {result.atol}, rtol {result.rtol})")
    lines += [t for t in (_timing("candidate", result.runtime), _timing("eager reference", result.ref_eager),
                          _timing("torch.compile ref", result.ref_compiled)) if t]
    if result.speedup_eager is not None:
        compiled = f", {result.speedup_compiled:.3f}x over torch.compile" if result.speedup_compiled else ""
        lines.append(f"  speedup: {result.speedup_eager:.3f}x over eager{compiled}")
    if result.flagged_for_review:
        lines.append("  flagged for review: more than 10x faster than the reference")
    if result.gate_log is not None:
        lines.append(f"  gfx950 compile gate: {'passed' if result.gate_ok else 'FAILED'}")
    for title, text in (("compiler log", result.compile_log), ("gate log", result.gate_log or ""),
                        ("traceback", result.traceback)):
        if text and (result.verdict.value != "correct"):
            tail = text.strip().splitlines()[-log_lines:]
            lines += [f"  --- {title} (last {len(tail)} lines) ---", *(f"  {line}" for line in tail)]
    return "\n".join(lines)
