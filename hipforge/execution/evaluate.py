"""Evaluate HIP candidates against their PyTorch reference, across three parties:

- the reference's process (reference_job.py) builds the task's Model with its own weights and computes
  every trial's reference outputs; the candidate never touches it;
- the candidate's process (candidate_job.py) imports the candidate with the build cache read-only, builds
  ModelNew and runs forward on the inputs each trial names; builds it lacks are made in a build job
  (build_job.py) that runs no candidate code;
- the judge (judge.py) here in the parent compares, times, counts threads and decides.

Evaluations run in parallel: only their timed phases hold the device alone (device_lock.py). One evaluation
from the parent's side is evaluation.Evaluation.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from hipforge.execution.antihack_static import blocking, scan
from hipforge.execution.baselines import BaselineCache
from hipforge.execution.config import GPU_BACKENDS, EvalConfig
from hipforge.execution.device_lock import DeviceLock, device_key
from hipforge.execution.evaluation import Evaluation
from hipforge.execution.gate_cache import GateCache
from hipforge.execution.protocol import protocol_key
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.sandbox.client import resolve_mode
from hipforge.sandbox.pool import pool_for
from hipforge.sandbox.pool import shutdown as shutdown_servers

ROLES = ("hipforge.execution.candidate_job", "hipforge.execution.reference_job", "hipforge.execution.build_job",
         "hipforge.execution.prebuild_job")
# the device ran out of memory (not the host's resident-memory limit): ours to retry, alone on the device
DEVICE_OOM = re.compile(r"(CUDA|HIP) out of memory|OutOfMemoryError|hipErrorOutOfMemory|cudaErrorMemoryAllocation")


def evaluate(candidate_source: str, task_source: str, config: EvalConfig | None = None,
             device_lock: DeviceLock | None = None) -> EvalResult:
    """``device_lock``: who has the device while this runs (hipforge.execution.device_lock); by default the
    machine-wide one of the device this process sees (a pool worker passes its own)."""
    cfg = config or EvalConfig()
    started = time.monotonic()
    result = _evaluate(candidate_source, task_source, cfg, device_lock or DeviceLock(device_key(cfg.backend)))
    result.backend, result.arch, result.protocol = cfg.backend, cfg.arch, protocol_key(cfg)
    result.seconds = round(time.monotonic() - started, 3)
    return result


def evaluate_many(items: Iterable[tuple[str, str]], config: EvalConfig | None = None,
                  parallel: int = 2) -> Iterator[tuple[int, EvalResult]]:
    """Evaluate (candidate, task) pairs; yield (index, result) as each one finishes."""
    pool = ThreadPoolExecutor(max_workers=parallel)
    try:
        futures = {pool.submit(evaluate, cand, task, config): i for i, (cand, task) in enumerate(items)}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:  # a caller that stops early (a boxed run) waits for the evaluations running, not the queued
        pool.shutdown(wait=True, cancel_futures=True)


def shutdown() -> None:
    """Stop every warm sandbox server (a pool worker does this when its device changes)."""
    shutdown_servers()


def _evaluate(candidate: str, task: str, cfg: EvalConfig, device_lock: DeviceLock) -> EvalResult:
    findings = scan(candidate) if cfg.static_checks else []
    if hit := blocking(findings, fp32_task=False):
        return EvalResult(Verdict.HACKED, f"line {hit.line}: {hit.message}", phase="static", hack_check=hit.check)
    mode = resolve_mode(cfg.isolation)
    pool = pool_for(mode, ROLES)
    baselines, gates = BaselineCache(Path(cfg.cache_dir) / "baselines"), GateCache(Path(cfg.cache_dir) / "gate")
    key, gate_key = baselines.key(task, cfg), gates.key(candidate, cfg.arch)
    # a cpu speedup is measured round by round beside its candidate (pairing.py): a reference timed in another
    # window, under another load, is what made cpu speedups of 30-1,000x
    cached = cfg.backend != "cpu"
    evaluation = Evaluation(cfg, mode, pool, candidate, task, baselines.get(key) if cached else None,
                            gates.get(gate_key) if cfg.gate else None)
    with pool.server() as ref_server, pool.server() as cand_server:
        result = evaluation.run(ref_server, cand_server, device_lock)
    if cfg.backend in GPU_BACKENDS and result.verdict == Verdict.RUNTIME_ERROR and DEVICE_OOM.search(result.message):
        # beside other evaluations the footprint bound can still miss (library workspaces, allocator caches):
        # the verdict on memory is the one it earns with the device to itself
        evaluation.owns_device = True
        with pool.server() as ref_server, pool.server() as cand_server:
            result = evaluation.run(ref_server, cand_server, device_lock)
        result.integrity["rerun"] = "alone on the device after running out of its memory beside others"
    result.isolation = result.isolation or [f"mode:{mode}"]
    if evaluation.prebuilt:
        result.integrity["prebuilt"] = evaluation.prebuilt
    hit = blocking(findings, fp32_task=evaluation.fp32)
    if hit and result.verdict in (Verdict.CORRECT, Verdict.INCORRECT):
        result.verdict, result.hack_check = Verdict.HACKED, hit.check
        result.message = f"line {hit.line}: {hit.message} in an fp32 task"
    if result.verdict == Verdict.CORRECT:
        result.finish_speedups(cfg.backend)
        if evaluation.baseline is None and cached:
            baselines.put(key, result.to_dict())
    if evaluation.gate_known is None and result.gate_ok is not None:  # judged by clang in this very evaluation
        gates.put(gate_key, result.gate_ok, result.gate_log)
    return result
