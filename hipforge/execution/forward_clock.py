"""The clock of the candidate's forwards, in its own process: CUDA events on GPUs, perf_counter on the CPU,
both bound when the harness starts, before the candidate exists (patching the modules afterwards misses them).
What it reports is a claim the parent checks against its own clock (hipforge.execution.wallclock)."""

from __future__ import annotations

import time
from typing import Any

from hipforge.execution.job_common import sync


class ForwardClock:
    def __init__(self, device: str, flush_l2_mb: int) -> None:
        import torch

        self.device, self.flush_l2_mb = device, flush_l2_mb
        self.now, self.event = time.perf_counter, (torch.cuda.Event if device != "cpu" else None)
        self._flush: Any = None

    def mark(self) -> Any:
        """A point in time of the forward's clock: a CUDA event on GPUs, perf_counter on the CPU."""
        if self.device == "cpu":
            return self.now()
        event = self.event(enable_timing=True)
        event.record()
        return event

    def elapsed(self, start: Any, end: Any) -> float:
        """Milliseconds from ``start`` to ``end``, once the whole device is done: work left on other streams
        lands inside the parent's clock."""
        if self.device == "cpu":
            return (end - start) * 1e3
        sync(self.device)
        return start.elapsed_time(end)

    def flush(self) -> None:
        """KernelBench's L2 flush before each GPU trial, then a device-wide sync."""
        import torch

        if self.device != "cpu":
            if self._flush is None:
                self._flush = torch.empty(self.flush_l2_mb << 18, dtype=torch.int32, device=self.device)
            self._flush.zero_()
            sync(self.device)
