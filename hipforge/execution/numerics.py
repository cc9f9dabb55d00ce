"""The evaluator's numerics: outputs against the reference's at the task's tolerances (in the parent, a slice
at a time), and how well-conditioned a float32 computation is: its distance from the same computation in
float64, in units of the tolerance (above 1, no float32 kernel can be judged at that tolerance)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hipforge.execution.config import LOOSE_FP32, EvalConfig

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


def _slices(x: Any, y: Any) -> Any:
    """Matching flat float64 slices of two same-shape tensors, CHUNK_ELEMENTS at a time."""
    xf, yf = x.reshape(-1), y.reshape(-1)
    for start in range(0, xf.numel(), CHUNK_ELEMENTS):
        yield xf[start:start + CHUNK_ELEMENTS].double(), yf[start:start + CHUNK_ELEMENTS].double()


def _close(x: Any, y: Any, atol: float, rtol: float) -> bool:
    import torch

    return torch.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True)



def widened(values: list[Any]) -> list[Any]:
    """A model's arguments for its float64 twin: float32 tensors as float64, the rest as they are."""
    import torch

    return [v.double() if isinstance(v, torch.Tensor) and v.dtype == torch.float32 else v for v in values]


def fp64_gap(pairs: Iterable[tuple[Any, Any]], atol: float = 1e-4, rtol: float = 1e-4) -> float:
    """The largest distance of float32 outputs from their float64 twins, (float32, float64) pairs, in units
    of the tolerance (a slice at a time: whole, its float64 temporaries took six float32 outputs' memory)."""
    return max(((x - y).abs() / (atol + rtol * y.abs())).max().item() for a, b in pairs for x, y in _slices(a, b))
