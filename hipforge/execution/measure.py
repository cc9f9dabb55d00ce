"""Comparing outputs with the reference (in the parent) and timing the reference (in its own process), as
KernelBench does."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from hipforge.execution.config import LOOSE_FP32, EvalConfig
from hipforge.execution.verdict import Timing

_perf_counter = time.perf_counter


# Outputs are compared a slice at a time: float64 copies of a KernelBench-size output (1.6e9 elements)
# would take 13 GB each, and several of them at once do not fit beside the inputs.
CHUNK_ELEMENTS = 1 << 24


def compare_outputs(flat: list[Any], ref_flat: list[Any], cfg: EvalConfig) -> dict[str, Any]:
    if len(flat) != len(ref_flat):
        return {"ok": False, "message": f"returns {len(flat)} outputs, the reference {len(ref_flat)}"}
    report: dict[str, Any] = {"ok": True, "message": "", "abs": 0.0, "rel": 0.0, "loose": True}
    for o, r in zip(flat, ref_flat, strict=True):
        if o.shape != r.shape or o.dtype != r.dtype:
            got, want = f"{tuple(o.shape)} {o.dtype}", f"{tuple(r.shape)} {r.dtype}"
            return {"ok": False, "message": f"output {got}, reference {want}"}
        atol, rtol = cfg.tolerance(str(r.dtype))
        close = loose = True
        for oc, rc in _slices(o, r):
            diff = (oc - rc).abs().nan_to_num(0.0)
            rel = diff / rc.abs().clamp_min(max(atol, 1e-12))
            report.update(abs=max(report["abs"], diff.max().item()), rel=max(report["rel"], rel.max().item()))
            close = close and _close(oc, rc, atol, rtol)
            loose = loose and _close(oc, rc, *LOOSE_FP32)
        report.update(atol=atol, rtol=rtol)
        if not close:
            message = f"max abs error {report['abs']:.3g}, atol={atol:g}, rtol={rtol:g}"
            report.update(ok=False, message=message)
        if r.dtype.is_floating_point and r.element_size() >= 4:
            report["loose"] = report["loose"] and loose
    return report


def summarize_errors(reports: list[dict[str, Any]], res: dict[str, Any]) -> None:
    measured = [r for r in reports if "atol" in r]
    if measured:
        res.update(max_abs_error=max(r["abs"] for r in measured), atol=measured[0]["atol"],
                   max_rel_error=max(r["rel"] for r in measured), rtol=measured[0]["rtol"],
                   passes_loose=all(r["loose"] for r in measured) if res.get("fp32_task") else None)


def allclose_all(a: list[Any], b: list[Any], atol: float = 1e-4, rtol: float = 1e-4) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and all(_close(xc, yc, atol, rtol) for xc, yc in _slices(x, y))
        for x, y in zip(a, b, strict=True))


def _slices(x: Any, y: Any) -> Any:
    """Matching flat float64 slices of two same-shape tensors, CHUNK_ELEMENTS at a time."""
    xf, yf = x.reshape(-1), y.reshape(-1)
    for start in range(0, xf.numel(), CHUNK_ELEMENTS):
        yield xf[start:start + CHUNK_ELEMENTS].double(), yf[start:start + CHUNK_ELEMENTS].double()


def _close(x: Any, y: Any, atol: float, rtol: float) -> bool:
    import torch

    return torch.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True)


def time_callable(fn: Callable[[list[Any]], Any], cfg: EvalConfig, device: str,
                  next_inputs: Callable[[], list[Any]]) -> dict[str, Any]:
    """Median and spread in ms of ``fn(inputs)``, fresh inputs drawn before every call (outside its time):
    perf_counter on CPU; on GPU events with the L2 flushed before each trial."""
    import torch

    samples = []
    with torch.no_grad():
        for _ in range(cfg.warmup):
            fn(next_inputs())
        if device == "cpu":
            for _ in range(cfg.timed_trials):
                args = next_inputs()
                start = _perf_counter()
                fn(args)
                samples.append((_perf_counter() - start) * 1e3)
        else:
            flush = torch.empty(cfg.flush_l2_mb << 18, dtype=torch.int32, device=device)
            for _ in range(cfg.timed_trials):
                args = next_inputs()
                flush.zero_()
                cuda_sync()
                start, end = _Event(enable_timing=True), _Event(enable_timing=True)
                start.record()
                fn(args)
                end.record()
                cuda_sync()
                samples.append(start.elapsed_time(end))
    return asdict(Timing.from_samples(samples))


def _bind_cuda_timers() -> tuple[Any, Any]:
    import torch

    return torch.cuda.Event, torch.cuda.synchronize


_Event, cuda_sync = _bind_cuda_timers()
