"""What a verdict depends on besides the kernel and the task: the evaluator's own code and the protocol's
settings, as one key stored with every evaluation. A re-run reuses a stored verdict only under the same key,
so an edit to the judge, the sandbox or a backend's shim, or another trial count, evaluates again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import cache
from pathlib import Path

from hipforge.execution.config import EvalConfig

_CODE = ("execution", "sandbox")  # packages under hipforge/ whose code judges
_SUFFIXES = {".py", ".h", ".hpp", ".cpp", ".cu", ".c"}
# where an evaluation runs, not what it decides
_MACHINE_FIELDS = {"cache_dir", "sandbox_uid", "max_processes", "isolation", "prebuild"}
# what a backend's stored times mean, named so a change of meaning is never reused as the same: cpu speedups
# are paired rounds in one window (pairing.py) since issue 22, in CPU time since v2 (v1 timed walls), each side
# on one thread since v3, the candidate's forward warm since v4, its claims bounded by no-op trials of the same
# rounds since v5, contradicted only beyond their spread (a batch contradicted throughout timed again) since v6;
# before, a reference timed in another window
TIMING_PROTOCOL = {"cpu": "paired-cpu-time-v6"}


@cache
def code_digest() -> str:
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for package in _CODE:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in _SUFFIXES and path.is_file():
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def protocol_key(cfg: EvalConfig) -> str:
    settings = {k: v for k, v in asdict(cfg).items() if k not in _MACHINE_FIELDS}
    timing = [TIMING_PROTOCOL[cfg.backend]] if cfg.backend in TIMING_PROTOCOL else []  # GPUs: KernelBench's
    text = json.dumps([code_digest(), settings, *timing], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
