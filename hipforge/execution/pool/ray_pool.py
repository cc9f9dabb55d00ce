"""The Ray pool: evaluations as Ray tasks on a Ray cluster (by address) or on a local Ray.

One task per evaluation. With GPUs in the cluster a task takes 1/``slots`` of one GPU, so Ray packs
``slots`` tasks per GPU and pins each to that GPU: their builds (the bottleneck, CPU work in the
sandbox) overlap while the device lock (job.py) lets one task at a time check and time its kernel on
that GPU. Without GPUs (the cpu backend) a task takes one CPU. Results stream back as they finish
(``ray.wait``). Ray retries a task whose worker process or node died on any worker with room
(``max_retries``), and one whose evaluator raised (``retry_exceptions``); results already yielded are
the caller's and nothing touches them again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hipforge.execution.config import GPU_BACKENDS, EvalConfig
from hipforge.execution.pool.base import Items, Work, lost, require_gpus
from hipforge.execution.pool.job import evaluate_job
from hipforge.execution.verdict import EvalResult

RETRY_EXCEPTIONS = [RuntimeError, OSError]  # infrastructure: a sandbox server that would not start, a full disk


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise RuntimeError("the ray pool needs Ray: pip install 'ray[default]'") from e
    return ray


class RayPool:
    name = "ray"

    def __init__(self, config: EvalConfig, address: str | None = None, slots: int = 4, max_retries: int = 2,
                 work: Work = evaluate_job, **init: Any) -> None:
        """``address``: a Ray cluster ("ray://head:10001", "auto"); none starts a local Ray, to which
        ``init`` (num_cpus=..., num_gpus=...) is passed. A Ray already initialized is used as it is."""
        if slots < 1 or max_retries < 0:
            raise ValueError(f"slots must be >= 1 and max_retries >= 0, got {slots} and {max_retries}")
        ray = _ray()
        self._owns = not ray.is_initialized()
        if self._owns:
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False, **init)
        resources = ray.cluster_resources()
        self.config, self.max_retries = config, max_retries
        if config.backend in GPU_BACKENDS:
            require_gpus(config.backend, resources.get("GPU", 0.0), f"the Ray cluster ({address or 'local'})")
            options: dict[str, float] = {"num_gpus": 1 / slots, "num_cpus": 1}
            self.capacity = int(resources["GPU"]) * slots
        else:
            options = {"num_cpus": 1}
            self.capacity = max(1, int(resources.get("CPU", 1)))
        self._task = ray.remote(work).options(max_retries=max_retries, retry_exceptions=RETRY_EXCEPTIONS, **options)

    def evaluate_many(self, items: Items) -> Iterator[tuple[int, EvalResult]]:
        ray = _ray()
        config = ray.put(self.config)
        source = enumerate(items)
        pending: dict[Any, int] = {}
        window = 2 * self.capacity  # enough queued to keep every worker busy, not the whole list at once
        while True:
            while len(pending) < window and (item := next(source, None)) is not None:
                index, (candidate, task) = item
                pending[self._task.remote(candidate, task, config)] = index
            if not pending:
                return
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), self._result(ref)

    def _result(self, ref: Any) -> EvalResult:
        ray = _ray()
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as e:  # retries exhausted: the item is answered, never dropped
            return lost(self.max_retries + 1, f"{type(e).__name__}: {str(e).strip().splitlines()[-1]}")

    def close(self) -> None:
        if self._owns:
            _ray().shutdown()
            self._owns = False
