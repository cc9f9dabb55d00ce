"""The clock of the candidate's forwards, in its own process: CUDA events on GPUs, perf_counter (and the
process's CPU time) on the CPU, bound when the harness starts, before the candidate exists (patching the modules
afterwards misses them). What it reports is a claim the parent checks against its own clocks (the wall:
hipforge.execution.wallclock; the CPU time read from outside: hipforge.execution.pairing)."""

from __future__ import annotations

import time
from typing import Any

from hipforge.execution.job_common import sync


class ForwardClock:
    def __init__(self, device: str, flush_l2_mb: int) -> None:
        import torch

        self.device, self.flush_l2_mb = device, flush_l2_mb
        self.now, self.event = time.perf_counter, (torch.cuda.Event if device != "cpu" else None)
        self.cpu_now = time.process_time_ns
        self._flush: Any = None

    def mark(self) -> Any:
        """A point in time of the forward's clock: a CUDA event on GPUs, (perf_counter, CPU ns) on the CPU."""
        if self.device == "cpu":
            return self.now(), self.cpu_now()
        event = self.event(enable_timing=True)
        event.record()
        return event

    def elapsed(self, start: Any, end: Any) -> float:
        """Milliseconds from ``start`` to ``end``, once the whole device is done: work left on other streams
        lands inside the parent's clock."""
        if self.device == "cpu":
            return (end[0] - start[0]) * 1e3
        sync(self.device)
        return start.elapsed_time(end)

    def cpu_ms(self, start: Any, end: Any) -> float:
        """The process's CPU time (every thread, ms) from ``start`` to ``end``; 0 on GPUs, whose times are events."""
        return (end[1] - start[1]) / 1e6 if self.device == "cpu" else 0.0

    def flush(self) -> None:
        """KernelBench's L2 flush before each GPU trial, then a device-wide sync."""
        import torch

        if self.device != "cpu":
            if self._flush is None:
                self._flush = torch.empty(self.flush_l2_mb << 18, dtype=torch.int32, device=self.device)
            self._flush.zero_()
            sync(self.device)
