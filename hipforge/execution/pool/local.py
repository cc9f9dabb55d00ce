"""The local pool: one warm worker per visible GPU, builds overlapping on all CPU cores.

Each GPU gets a worker process pinned to it (its ``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES``)
that runs ``slots`` evaluations at once: their builds, the bottleneck, run in parallel in the sandbox
servers (the compile pool: by default the machine's cores split over the GPUs), while the device lock
lets one at a time run correctness trials and timing on its GPU. With one device (the cpu backend, or
one GPU) the calling process is that worker: nothing is spawned and its sandbox servers stay warm
between calls. A dead worker is restarted and its unfinished evaluations are queued again.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import queue
import threading
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hipforge.execution.config import EvalConfig
from hipforge.execution.device_lock import VISIBLE_DEVICES
from hipforge.execution.evaluate import evaluate_many
from hipforge.execution.pool.base import Items, Work, lost, require_gpus, visible_gpus
from hipforge.execution.pool.job import evaluate_job
from hipforge.execution.verdict import EvalResult

POLL_S = 0.5  # how often a quiet pool looks for dead workers


def _serve(env: dict[str, str], slots: int, work: Work, jobs: Any, results: Any) -> None:
    """A worker process: ``slots`` threads evaluate jobs from this worker's queue."""
    os.environ.update(env)

    def loop() -> None:
        while (job := jobs.get()) is not None:
            batch, index, candidate, task, config = job
            try:
                results.put((batch, index, work(candidate, task, config), None))
            except Exception as e:  # the evaluator itself failed (a sandbox server that would not start)
                results.put((batch, index, None, f"{type(e).__name__}: {e}"))

    threads = [threading.Thread(target=loop, name=f"slot-{i}") for i in range(slots)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@dataclass
class _Worker:
    process: Any
    jobs: Any
    assigned: set[int] = field(default_factory=set)


class LocalPool:
    name = "local"

    def __init__(self, config: EvalConfig, slots: int | None = None, workers: int = 1, max_retries: int = 2,
                 work: Work = evaluate_job, gpus: list[str] | None = None) -> None:
        """``workers``: worker processes of the cpu backend; GPU backends get one per GPU (``gpus``: the
        ids to use, default every visible one)."""
        chosen = visible_gpus(config.backend) if gpus is None else gpus
        require_gpus(config.backend, len(chosen), "this machine")
        if workers < 1 or (slots is not None and slots < 1):
            raise ValueError(f"workers and slots must be >= 1, got workers={workers} slots={slots}")
        self.config, self.work, self.max_retries = config, work, max_retries
        self.devices: list[str | None] = list(chosen) or [None] * workers
        # one device this process already uses (cpu, or its only GPU): evaluate here, servers stay warm
        self._inline = len(self.devices) == 1 and (self.devices[0] is None or gpus is None)
        self.slots = slots or max(1, (os.cpu_count() or 1) // len(self.devices))
        self._ctx = mp.get_context("spawn")  # a fork would copy the caller's threads and CUDA state
        self._results: Any = None
        self._workers: list[_Worker] = []
        self._batches = itertools.count()

    def evaluate_many(self, items: Items) -> Iterator[tuple[int, EvalResult]]:
        if self._inline:
            yield from evaluate_many(items, self.config, parallel=self.slots)
            return
        self._start()
        batch, source = next(self._batches), enumerate(items)
        pairs: dict[int, tuple[str, str]] = {}  # unanswered items
        owner: dict[int, _Worker] = {}
        retry: deque[int] = deque()
        attempts: Counter[int] = Counter()
        for worker in self._workers:
            worker.assigned.clear()  # what an abandoned earlier call left there is not ours to wait for
        while True:
            for worker in self._workers:
                while len(worker.assigned) < self.slots and (index := _next(retry, source, pairs)) is not None:
                    worker.assigned.add(index)
                    owner[index] = worker
                    worker.jobs.put((batch, index, *pairs[index], self.config))
            if not pairs:
                return
            failed = self._reap()
            try:
                got, index, result, error = self._results.get(timeout=POLL_S)
            except queue.Empty:
                got, index = None, -1
            if got == batch and index in pairs:
                owner.pop(index).assigned.discard(index)
                failed += [] if error is None else [(index, error)]
                if error is None:
                    del pairs[index]
                    yield index, result
            for index, why in failed:
                if index not in pairs:  # its result made it out before the worker died
                    continue
                attempts[index] += 1
                if attempts[index] <= self.max_retries:
                    retry.append(index)  # the first worker with a free slot takes it
                else:
                    del pairs[index]
                    yield index, lost(attempts[index], why)

    def _start(self) -> None:
        if not self._workers:
            self._results = self._ctx.Queue()
            self._workers = [self._spawn(wid) for wid in range(len(self.devices))]

    def _spawn(self, wid: int) -> _Worker:
        device = self.devices[wid]
        env = {VISIBLE_DEVICES[self.config.backend][0]: device} if device is not None else {}
        jobs = self._ctx.Queue()
        process = self._ctx.Process(target=_serve, args=(env, self.slots, self.work, jobs, self._results),
                                    name=f"hipforge-pool-{wid}", daemon=True)
        process.start()
        return _Worker(process, jobs)

    def _reap(self) -> list[tuple[int, str]]:
        """Replace dead workers; their unfinished items come back as failures of one attempt."""
        failed: list[tuple[int, str]] = []
        for wid, worker in enumerate(self._workers):
            if not worker.process.is_alive():
                why = f"worker {wid} exited with status {worker.process.exitcode}"
                failed += [(index, why) for index in sorted(worker.assigned)]
                self._workers[wid] = self._spawn(wid)
        return failed

    def close(self) -> None:
        for worker in self._workers:
            for _ in range(self.slots):
                worker.jobs.put(None)
        for worker in self._workers:
            worker.process.join(timeout=30)
            if worker.process.is_alive():
                worker.process.kill()
        self._workers = []


def _next(retry: deque[int], source: Iterator[tuple[int, tuple[str, str]]],
          pairs: dict[int, tuple[str, str]]) -> int | None:
    while retry:
        index = retry.popleft()
        if index in pairs:  # else a result of the dead worker's arrived after all
            return index
    index, pair = next(source, (None, None))
    if index is None or pair is None:
        return None
    pairs[index] = pair
    return index
