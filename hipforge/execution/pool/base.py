"""What every evaluation pool offers, and what both implementations share.

A pool takes (candidate, task) pairs and yields (index, result) as each evaluation finishes, so the
asset that asked can record and log results while the rest are still running. An evaluation whose
worker died is retried on another worker; one that lost its worker on every attempt comes back as a
``runtime_error`` saying so, never silently dropped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from hipforge.execution.config import GPU_BACKENDS, EvalConfig
from hipforge.execution.device_lock import VISIBLE_DEVICES
from hipforge.execution.verdict import EvalResult, Verdict

Items = Iterable[tuple[str, str]]
Work = Callable[[str, str, EvalConfig], EvalResult]  # one evaluation in a worker: job.evaluate_job


class EvalPool(Protocol):
    name: str

    def evaluate_many(self, items: Items) -> Iterator[tuple[int, EvalResult]]:
        """Evaluate (candidate, task) pairs; yield (index, result) in the order they finish."""
        ...

    def close(self) -> None: ...


def lost(attempts: int, why: str) -> EvalResult:
    return EvalResult(Verdict.RUNTIME_ERROR, f"evaluation lost: its worker failed on all {attempts} attempts "
                                             f"({why[:500]})", phase="pool")


def visible_gpus(backend: str) -> list[str]:
    """The GPU ids a local pool pins its workers to: none for the cpu backend."""
    if backend not in GPU_BACKENDS:
        return []
    import torch

    count = torch.cuda.device_count()  # ROCm builds of torch answer here too
    # a worker's pin must name the same device our own mask does: pass the masked ids through
    names = VISIBLE_DEVICES[backend]
    mask = next((os.environ[n] for n in names if os.environ.get(n)), "")
    ids = [d.strip() for d in mask.split(",") if d.strip()] if mask else [str(i) for i in range(count)]
    return ids[:count]


def require_gpus(backend: str, count: float, where: str) -> None:
    if backend in GPU_BACKENDS and count < 1:
        raise RuntimeError(f"backend {backend!r} evaluates on GPUs, but {where} has none")
