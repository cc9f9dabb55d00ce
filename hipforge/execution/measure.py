"""Timing a forward as KernelBench does: warm-ups, then timed trials on fresh inputs (perf_counter on CPU,
events with the L2 flushed on GPU)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from hipforge.execution.config import EvalConfig
from hipforge.execution.verdict import Timing

_perf_counter = time.perf_counter
_process_time_ns = time.process_time_ns


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


def event_times(fn: Callable[[], Any], warmup: int, trials: int, flush: Any = None) -> list[float]:
    """CUDA-event times (ms) of ``trials`` calls of ``fn`` after ``warmup`` untimed ones, ``flush`` (a device
    tensor, L2-sized or more) zeroed before each if given: the GPU scripts' loop, for trusted code run
    in-process (scripts/gpu_gemm_measure.py, scripts/time_breakdown.py)."""
    for _ in range(warmup):
        fn()
    cuda_sync()
    times = []
    for _ in range(trials):
        if flush is not None:
            flush.zero_()
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        cuda_sync()
        times.append(start.elapsed_time(end))
    return times


def cpu_time_warm(fn: Callable[[], Any]) -> float:
    """CPU time in ms of a call of ``fn`` right after an untimed one (every thread of this process), on one
    intra-op thread and without autograd: a reference trial of the cpu backend's paired rounds, which
    preemption cannot inflate. Warm, as every round's is: a small op's first call after its process slept
    cost 6-12x its next one, by how cold the caches were left, and only the rounds' first trial (beside the
    warm-ups) was warm, so the fastest trial hinged on that one. One thread, as the candidate's launches run on
    one worker then (cpu/workers.py): more threads never lower a CPU time, and waking a pool's threads adds
    a cost that moves with the load on the cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            fn()
            start = _process_time_ns()
            fn()
            return (_process_time_ns() - start) / 1e6
    finally:
        torch.set_num_threads(threads)


def _bind_cuda_timers() -> tuple[Any, Any]:
    import torch

    return torch.cuda.Event, torch.cuda.synchronize


_Event, cuda_sync = _bind_cuda_timers()
