"""Reference timings per task and machine, measured once and reused.

KernelBench stores its eager and torch.compile baselines per hardware; so do we. Timing the
reference costs every evaluation the protocol's trials again, and compiling it with torch.compile
15-60 s on a GPU.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hipforge.execution.compile_cache import cache_key
from hipforge.execution.config import EvalConfig
from hipforge.execution.json_cache import JsonCache

TIMING_FIELDS = ("ref_eager", "ref_compiled")


class BaselineCache(JsonCache):
    def key(self, task_source: str, cfg: EvalConfig) -> str:
        """Everything that changes a reference timing: the task, the backend and the timing protocol."""
        return cache_key(task=hashlib.sha256(task_source.encode()).hexdigest(), backend=cfg.backend,
                         arch=cfg.arch, warmup=cfg.warmup, trials=cfg.timed_trials, flush=cfg.flush_l2_mb,
                         compiled=cfg.time_compiled_ref, seed=cfg.seeds[0])

    def put(self, key: str, result: dict[str, Any]) -> None:
        """Keep the reference timings of a correct evaluation."""
        timings = {k: result[k] for k in TIMING_FIELDS if result.get(k)}
        if "ref_eager" in timings:
            self.write(key, timings)
