"""Coverage without a profiler: the share of a forward's roofline time that our kernels account for.

Wall time cannot say it on the cpu backend: HIP-on-CPU fibers run a ReLU slower than MKL runs a GEMM, so
a candidate leaving the GEMM to ATen would look fully covered. Instead every ATen op the forward runs
outside our extension calls is traced (a dispatch mode) and costed at the device's roofs, max(FLOPs / peak
FLOP rate, bytes / peak bandwidth); our extension calls are costed by the tensors they read and write plus
the FLOPs the task needs that ATen did not do. The result depends on the work split, not on the backend's
speed, and is labelled an estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hipforge.execution.profile.peaks import Peaks


@dataclass
class WorkSplit:
    aten: list[tuple[float, float]] = field(default_factory=list)  # (FLOPs, bytes) of each ATen op
    custom_bytes: float = 0.0  # tensors our extension calls read and write
    custom_calls: int = 0
    task_flops: float = 0.0  # the reference's FLOPs on the same inputs
    task_bytes: float = 0.0  # the least it must move: its inputs, parameters and outputs

    def coverage(self, peaks: Peaks) -> float:
        """Our kernels' share of the forward's roofline time on a device with these peaks."""
        aten_flops = sum(f for f, _ in self.aten)
        custom_flops = max(self.task_flops - aten_flops, 0.0)
        custom = max(custom_flops / peaks.flops, self.custom_bytes / peaks.bandwidth)
        total = custom + sum(max(f / peaks.flops, b / peaks.bandwidth) for f, b in self.aten)
        return custom / total if total > 0 else 0.0

    @property
    def launches(self) -> int:
        return len(self.aten) + self.custom_calls


class Tracer:
    """Wraps extension modules (``wrap``) and traces ATen ops outside them (``trace``)."""

    def __init__(self) -> None:
        self.split, self.inside = WorkSplit(), 0

    def wrap(self, module: Any) -> Any:
        import types

        proxy = types.ModuleType(getattr(module, "__name__", "extension"))
        for name in dir(module):
            value = getattr(module, name)
            setattr(proxy, name, self._counted(value) if callable(value) and not name.startswith("_") else value)
        return proxy

    def _counted(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.inside += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                self.inside -= 1
            self.split.custom_calls += 1
            self.split.custom_bytes += _nbytes([*args, *kwargs.values(), out])
            return out

        return call

    def trace(self) -> Any:
        """A context manager that records the ATen ops run outside extension calls."""
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        tracer = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                if not tracer.inside:
                    tracer.record(func, args, kwargs, out, flop_registry)
                return out

        return Mode()

    def record(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any, registry: dict[Any, Any]) -> None:
        inputs = _nbytes([*args, *kwargs.values()])
        if func.is_view or not inputs:  # views move nothing; factories (empty, ...) read nothing
            return
        count = registry[func.overloadpacket](*args, **kwargs, out_val=out) if func.overloadpacket in registry else 0
        self.split.aten.append((float(count), float(inputs + _nbytes([out]))))


def reference_work(model: Any, inputs: list[Any]) -> WorkSplit:
    """The reference's FLOPs and least bytes (as tasks/reference_check.py counts them at task ingest)."""
    import torch

    tracer = Tracer()  # the same accounting as the candidate's ATen ops, so the two agree op for op
    with torch.no_grad(), tracer.trace():
        out = model(*inputs)
    moved = _nbytes([*inputs, out, *model.parameters()])
    return WorkSplit(task_flops=sum(f for f, _ in tracer.split.aten), task_bytes=float(moved))


def _nbytes(values: list[Any]) -> int:
    import torch

    total = 0
    for v in values:
        if isinstance(v, torch.Tensor):
            total += v.nbytes
        elif isinstance(v, list | tuple):
            total += _nbytes(list(v))
    return total
