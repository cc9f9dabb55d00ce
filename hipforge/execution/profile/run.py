"""Profile one verified candidate with the best tool this machine has: ncu, rocprofv3, or the estimate.

The candidate's forward runs in a child process (``target.py``) under the profiler; the estimate path runs
the same child in ``work`` mode. ``measure_coverage`` is what a reward needs: the coverage and its source.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from hipforge.execution.config import EvalConfig
from hipforge.execution.profile import ncu, rocprof
from hipforge.execution.profile.detect import profiler_for
from hipforge.execution.profile.estimate import SOURCE as ESTIMATE_SOURCE
from hipforge.execution.profile.estimate import estimate
from hipforge.execution.profile.peaks import Peaks
from hipforge.execution.profile.signals import Profile, bottleneck, custom_kernel_names, summarize
from hipforge.execution.profile.work import WorkSplit
from hipforge.sandbox.env import PROJECT_ROOT

WORK_PREFIX = "HIPFORGE-WORK "


class ProfileError(RuntimeError):
    """The profiler or the profiled forward failed; the message ends with the tail of their output."""


def profile_candidate(candidate_source: str, task_source: str, cfg: EvalConfig, peaks: Peaks, *,
                      runtime_ms: float | None = None, flops: float | None = None, bytes_moved: float | None = None,
                      tool: str | None = "auto", timeout_s: float = 300.0) -> Profile:
    """``tool``: "auto" (the backend's profiler when installed), "ncu", "rocprofv3" or None (estimate, whose
    roofline position needs ``runtime_ms``, the executor's measured median). ``flops``/``bytes_moved``: the task's."""
    chosen = profiler_for(cfg.backend) if tool == "auto" else tool
    names = custom_kernel_names(candidate_source)
    with tempfile.TemporaryDirectory(prefix="hipforge-profile-") as work:
        job = Path(work, "job.json")
        mode = "profile" if chosen else "work"
        job.write_text(json.dumps({"mode": mode, "candidate_source": candidate_source, "task_source": task_source,
                                   "config": cfg.to_dict()}))
        target = [sys.executable, "-m", "hipforge.execution.profile.target", str(job)]
        if chosen == "ncu":
            log = str(Path(work, "ncu.csv"))
            _run(ncu.command(target, log, metrics=_ncu_metrics()), timeout_s, cfg.cache_dir)
            text = Path(log).read_text() if Path(log).exists() else ""
            try:
                return summarize(ncu.parse(text, names), peaks, "ncu")
            except ValueError as e:
                raise ProfileError(f"{e}; ncu's log ends:\n{text[-1500:]}") from None
        if chosen == "rocprofv3":
            _run(rocprof.command(target, work), timeout_s, cfg.cache_dir)
            window = rocprof.marker_window(rocprof.find(work, "marker_api_trace.csv").read_text())
            kernels = rocprof.parse_trace(rocprof.find(work, "kernel_trace.csv").read_text(), names, window)
            return _with_task_work(summarize(kernels, peaks, "rocprofv3"), flops, bytes_moved, peaks)
        if chosen is not None:
            raise ValueError(f"unknown profiler {chosen!r}: expected ncu, rocprofv3 or None")
        printed = _run(target, timeout_s, cfg.cache_dir)
        if WORK_PREFIX not in printed:
            raise ProfileError(f"the work-split run printed no result:\n{printed[-2000:]}")
        split = WorkSplit(**json.loads(printed.split(WORK_PREFIX, 1)[1].splitlines()[0]))
        found = estimate(split.task_flops if flops is None else flops,
                         split.task_bytes if bytes_moved is None else bytes_moved, runtime_ms, peaks,
                         split.coverage(peaks), split.launches)
        return replace(found, source=f"{ESTIMATE_SOURCE}; coverage: roofline work share of traced ops")


def measure_coverage(candidate_source: str, task_source: str, cfg: EvalConfig, peaks: Peaks,
                     runtime_ms: float | None = None, tool: str | None = "auto") -> tuple[float, str]:
    """(coverage, where it came from): the share of the forward in the candidate's own kernels, for rewards."""
    found = profile_candidate(candidate_source, task_source, cfg, peaks, runtime_ms=runtime_ms, tool=tool)
    if found.coverage is None:
        raise ProfileError(f"{found.source} gave no coverage")
    return found.coverage, found.source


def _with_task_work(found: Profile, flops: float | None, bytes_moved: float | None, peaks: Peaks) -> Profile:
    """A kernel trace has no counters: roofline position from the task's FLOPs and bytes over kernel time."""
    seconds = (found.time_ms or 0.0) * 1e-3
    if seconds <= 0:
        return found
    bandwidth = None if bytes_moved is None else bytes_moved / seconds / peaks.bandwidth
    flop_share = None if flops is None else flops / seconds / peaks.flops
    mean_us = seconds * 1e6 / len(found.kernels)
    return replace(found, bandwidth_share=bandwidth, flop_share=flop_share,
                   bottleneck=bottleneck(found.coverage, bandwidth, flop_share, mean_us),
                   source="rocprofv3 (roofline position: task FLOPs and bytes / kernel time)")


@functools.cache
def _ncu_metrics() -> list[str]:
    try:
        return ncu.supported(_run(["ncu", "--query-metrics"], 120.0))
    except ValueError:  # a listing we cannot read: ask for all of them, and ncu names any it lacks
        return list(ncu.METRICS)


def _run(argv: list[str], timeout_s: float, cache_dir: str | None = None) -> str:
    """``cache_dir``: the executor's build cache, so the candidate's extension is not built again."""
    env = {**os.environ, "PYTHONPATH": PROJECT_ROOT, **({"HIPFORGE_COMPILE_CACHE": cache_dir} if cache_dir else {})}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        raise ProfileError(f"{argv[0]} did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise ProfileError(f"{Path(argv[0]).name} exited with status {done.returncode}:\n{tail}")
    return done.stdout
