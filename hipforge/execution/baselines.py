"""Reference timings per task and machine, measured once and reused.

KernelBench stores its eager and torch.compile baselines per hardware; so do we. Timing the
reference costs every evaluation 100 trials, and compiling it with torch.compile 15-60 s on a GPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hipforge.execution.compile_cache import cache_key
from hipforge.execution.config import EvalConfig

TIMING_FIELDS = ("ref_eager", "ref_compiled")


class BaselineCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def key(self, task_source: str, cfg: EvalConfig) -> str:
        """Everything that changes a reference timing: the task, the backend and the timing protocol."""
        return cache_key(task=hashlib.sha256(task_source.encode()).hexdigest(), backend=cfg.backend,
                         arch=cfg.arch, warmup=cfg.warmup, trials=cfg.timed_trials, flush=cfg.flush_l2_mb,
                         compiled=cfg.time_compiled_ref, seed=cfg.seeds[0])

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.root / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, result: dict[str, Any]) -> None:
        """Keep the reference timings of a correct evaluation (write to a temp file, then rename)."""
        timings = {k: result[k] for k in TIMING_FIELDS if result.get(k)}
        if "ref_eager" not in timings:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(timings, f)
        os.replace(tmp, self.root / f"{key}.json")
