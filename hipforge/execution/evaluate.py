"""Evaluate HIP candidates against their PyTorch reference: static checks, then in the sandbox the gfx950
gate, the build, correctness over seeds and timing (``worker.py``), with every failure classified.

Evaluations run in parallel on warm sandbox servers (builds overlap) while a lock lets only one
at a time run its correctness trials and timing, so timings do not disturb each other.
"""

from __future__ import annotations

import atexit
import secrets
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hipforge.execution.antihack_static import Finding, blocking, scan
from hipforge.execution.baselines import BaselineCache
from hipforge.execution.config import EvalConfig
from hipforge.execution.gate_cache import GateCache
from hipforge.execution.sandbox import Outcome, Server, resolve_mode
from hipforge.execution.verdict import EvalResult, Verdict

GPU_BACKENDS = ("cuda", "rocm")


def evaluate(candidate_source: str, task_source: str, config: EvalConfig | None = None,
             run_lock: threading.Lock | None = None) -> EvalResult:
    """``run_lock`` (anything with acquire/release) replaces this process's own lock around the timed
    part: pool workers pass one lock per device, shared by every process that uses that device."""
    cfg = config or EvalConfig()
    started = time.monotonic()
    result = _evaluate(candidate_source, task_source, cfg, run_lock)
    result.backend, result.arch = cfg.backend, cfg.arch
    result.seconds = round(time.monotonic() - started, 3)
    return result


def evaluate_many(items: Iterable[tuple[str, str]], config: EvalConfig | None = None,
                  parallel: int = 2) -> Iterator[tuple[int, EvalResult]]:
    """Evaluate (candidate, task) pairs; yield (index, result) as each one finishes."""
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {pool.submit(evaluate, cand, task, config): i for i, (cand, task) in enumerate(items)}
        for future in as_completed(futures):
            yield futures[future], future.result()


def _evaluate(candidate_source: str, task_source: str, cfg: EvalConfig,
              run_lock: threading.Lock | None) -> EvalResult:
    findings = scan(candidate_source) if cfg.static_checks else []
    if hit := blocking(findings, fp32_task=False):
        return EvalResult(Verdict.HACKED, f"line {hit.line}: {hit.message}", phase="static",
                          hack_check=hit.check)
    mode = resolve_mode(cfg.isolation)
    pool = _pools.setdefault(mode, _Pool(mode))
    baselines, gates = BaselineCache(Path(cfg.cache_dir) / "baselines"), GateCache(Path(cfg.cache_dir) / "gate")
    key, gate_key = baselines.key(task_source, cfg), gates.key(candidate_source, cfg.arch)
    job = {**_job(candidate_source, task_source, cfg, mode), "baseline": baselines.get(key),
           "gate_known": gates.get(gate_key) if cfg.gate else None}
    with pool.server() as server:
        outcome = server.run(job, run_lock or pool.run_lock)
    result = _classify(outcome, cfg, findings, mode)
    if result.verdict == Verdict.CORRECT and job["baseline"] is None:
        baselines.put(key, result.to_dict())
    if job["gate_known"] is None and result.gate_ok is not None:  # judged by clang in this very job
        gates.put(gate_key, result.gate_ok, result.gate_log)
    return result


def _job(candidate: str, task: str, cfg: EvalConfig, mode: str) -> dict[str, Any]:
    return {
        "nonce": secrets.token_hex(16), "mode": mode, "config": cfg.to_dict(),
        "candidate_source": candidate, "task_source": task, "cache_dir": cfg.cache_dir,
        "uid": cfg.sandbox_uid, "gid": cfg.sandbox_uid,
        "tmp_size_mb": cfg.tmp_size_mb, "max_file_mb": cfg.max_file_mb, "max_processes": cfg.max_processes,
        # GPU runtimes reserve huge address ranges: there only the resident set is limited (watched)
        "address_limit_mb": 0 if cfg.backend in GPU_BACKENDS else cfg.memory_limit_mb,
        "rss_limit_mb": cfg.memory_limit_mb,
        "compile_timeout_s": cfg.compile_timeout_s, "run_timeout_s": cfg.run_timeout_s,
    }


def _classify(outcome: Outcome, cfg: EvalConfig, findings: list[Finding], mode: str) -> EvalResult:
    data = dict(outcome.result or {})
    fp32_task = data.pop("fp32_task", None)
    if outcome.timed_out:
        limit = cfg.compile_timeout_s if outcome.phase == "compile" else cfg.run_timeout_s
        result = EvalResult(Verdict.TIMEOUT, f"{outcome.phase} phase did not finish within {limit:g} s "
                                             f"(the sandbox and everything it started were killed)")
    elif "verdict" in data:
        result = EvalResult.from_dict(data)
    else:
        exit_ = outcome.exit or {}
        if exit_.get("memory"):
            why = f"killed: resident memory over the {cfg.memory_limit_mb} MB limit"
        elif "signal" in exit_:
            why = f"crashed with {exit_['signal']}"
        else:
            why = f"exited (status {exit_.get('code', '?')}) before reporting"
        result = EvalResult(Verdict.RUNTIME_ERROR, f"{why} during the {outcome.phase} phase")
    result.phase = result.phase or outcome.phase
    result.output_tail = outcome.output_tail
    result.isolation = result.isolation or [f"mode:{mode}"]  # the worker died before it could say
    hit = blocking(findings, fp32_task=bool(fp32_task))
    if hit and result.verdict in (Verdict.CORRECT, Verdict.INCORRECT):
        result.verdict, result.hack_check = Verdict.HACKED, hit.check
        result.message = f"line {hit.line}: {hit.message} in an fp32 task"
    if result.verdict == Verdict.CORRECT:
        result.finish_speedups()
    return result


class _Pool:
    """Warm sandbox servers, one per evaluation in flight; a dead one (timeouts kill theirs) is replaced."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.idle: list[Server] = []
        self.lock = threading.Lock()
        self.run_lock = threading.Lock()

    @contextmanager
    def server(self) -> Iterator[Server]:
        with self.lock:
            server = self.idle.pop() if self.idle else None
        if server is None or not server.alive():
            server = Server(self.mode)
        try:
            yield server
        finally:
            if server.alive():
                with self.lock:
                    self.idle.append(server)


_pools: dict[str, _Pool] = {}


@atexit.register
def shutdown() -> None:
    """Stop every warm sandbox server."""
    for pool in list(_pools.values()):
        with pool.lock:
            servers, pool.idle = pool.idle, []
        for server in servers:
            server.kill()
