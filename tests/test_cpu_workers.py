"""The fiber runtime's worker count, set between trials (hipforge/execution/cpu/workers.py): the cpu backend's
timed trials run every launch on one worker, so a small kernel's CPU time is its work rather than the spawning
and joining of workers; checked trials keep every worker, so blocks still run concurrently there."""

from __future__ import annotations

import os
import threading

import pytest

torch = pytest.importorskip("torch")

from hipforge.execution.compile_cache import CompileCache  # noqa: E402
from hipforge.execution.cpu import CpuBackend, workers  # noqa: E402

# each block's OS thread, after a pause long enough that a second worker always takes blocks too
WHO_RUNS = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <sys/syscall.h>
#include <unistd.h>
__global__ void who(int64_t* out) {
    if (threadIdx.x == 0) {
        usleep(2000);
        out[blockIdx.x] = (int64_t)syscall(SYS_gettid);
    }
}
torch::Tensor block_threads(int64_t blocks) {
    auto out = torch::zeros({blocks}, torch::kInt64);
    who<<<blocks, 64>>>(out.data_ptr<int64_t>());
    return out;
}
"""


@pytest.fixture(autouse=True)
def _variable_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(workers.VARIABLE, raising=False)  # whatever the tests set, monkeypatch puts back


def test_one_worker_sets_and_restores_the_runtimes_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "_STARTED_WITH", "3")
    workers.one_worker(True)
    assert os.environ[workers.VARIABLE] == "1"
    workers.one_worker(False)
    assert os.environ[workers.VARIABLE] == "3"
    monkeypatch.setattr(workers, "_STARTED_WITH", None)
    workers.one_worker(False)
    assert workers.VARIABLE not in os.environ


def test_the_runtime_reads_the_worker_count_at_every_launch(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One process, one library: launches spread their blocks over three workers, then run on one worker (the
    launching thread), then over three again, as the variable says at each launch."""
    backend = CpuBackend(cache=CompileCache(tmp_path / "cache"), pch_cache=CompileCache())
    module = backend.load_inline("hipforge_test_workers", WHO_RUNS, functions=["block_threads"])
    monkeypatch.setattr(workers, "_STARTED_WITH", "3")

    def threads_seen() -> set[int]:
        return set(module.block_threads(12).tolist())

    workers.one_worker(False)
    assert len(threads_seen()) >= 2
    workers.one_worker(True)
    assert threads_seen() == {threading.get_native_id()}
    workers.one_worker(False)
    assert len(threads_seen()) >= 2
