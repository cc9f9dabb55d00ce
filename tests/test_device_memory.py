"""Device memory as the evaluations' shared resource: a task's footprint sized on the meta device, and the
admission that keeps evaluations in flight within a device's memory (always at least one)."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hipforge.execution import device_memory
from hipforge.execution.config import EvalConfig
from hipforge.execution.device_memory import DeviceMemory, caps_mb, footprint_mb, share_mb
from hipforge.execution.evaluate import evaluate
from hipforge.execution.job_common import load_task
from hipforge.execution.verdict import Verdict
from tests.corpus import entries

LINEAR = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.register_buffer("scale", torch.ones(n_out, dtype=torch.float64))

    def forward(self, x):
        return {forward}

def get_inputs():
    return [torch.randn(64, 1024)]

def get_init_inputs():
    return [1024, 512]
"""
MB = 2**20


def task(forward: str) -> types.ModuleType:
    return load_task(LINEAR.replace("{forward}", forward), "hipforge_test_sizing")


def test_the_footprint_counts_weights_buffers_inputs_and_outputs_without_allocating() -> None:
    weights = (1024 * 512 + 512) * 4 + 512 * 8
    inputs, outputs = 64 * 1024 * 4, 64 * 512 * 4
    assert footprint_mb(task("self.fc(x)"), 0) == pytest.approx((weights + inputs + outputs) / MB)
    # the tensors the forward creates count while they live: of a chain of three, two at once (the one an op
    # reads and the one it writes); a view aliases one and adds nothing
    chain = "torch.relu(self.fc(x)).view(-1) * 2"
    assert footprint_mb(task(chain), 0) == pytest.approx((weights + inputs + 2 * outputs) / MB)
    # three kept for cat, which writes as much again
    kept = "torch.cat([self.fc(x), torch.relu(self.fc(x)), self.fc(x) * 2])"
    assert footprint_mb(task(kept), 0) == pytest.approx((weights + inputs + 6 * outputs) / MB)
    # an op with no meta kernel (a value read on the host): the outputs are guessed as large as the inputs
    assert footprint_mb(task("self.fc(x) * float(x.sum())"), 0) == pytest.approx((weights + 2 * inputs) / MB)
    unbuildable = load_task(LINEAR.replace("return [1024, 512]", "return [int(torch.randn(1).abs()) + 1024, 512]")
                            .replace("{forward}", "x"), "hipforge_test_sizing_value")
    assert footprint_mb(unbuildable, 0) == 0.0  # a constructor that reads a value: counted as nothing


def test_the_candidates_cap_holds_its_flush_buffer_and_probes_beside_the_task() -> None:
    """Measured on the H100: the candidate's process reserved 646 MB on a task of under 1 MB, timed with a 256 MB
    L2 flush; a cap below that sent every small evaluation out of memory and back to run alone."""
    tiny = caps_mb(0.5, 256)
    assert tiny.candidate >= 646 * 1.15 and tiny.reference >= 84 * 2
    assert caps_mb(0.5, 512).candidate - tiny.candidate == 256  # a larger flush buffer is held on top
    big = caps_mb(3072, 256)  # a 3 GB KernelBench elementwise task fit in 14.8 GB beside others
    assert big.candidate >= 14848 * 1.05
    assert share_mb(3072, 256) == pytest.approx(big.candidate + big.reference + 1024)


def test_evaluations_that_do_not_fit_together_wait_for_memory_and_one_always_runs() -> None:
    memory, order, lock = DeviceMemory(), [], threading.Lock()
    first_in, release_first = threading.Event(), threading.Event()

    def run(name: str, mb: float, hold_until: threading.Event | None = None) -> None:
        with memory.hold("gpu:0", mb, capacity_mb=100):
            with lock:
                order.append(f"{name} in")
            if hold_until is not None:
                first_in.set()
                hold_until.wait(5)
            with lock:
                order.append(f"{name} out")  # still holding, as above

    big = threading.Thread(target=run, args=("big", 70, release_first))
    big.start()
    assert first_in.wait(5)
    small = threading.Thread(target=run, args=("small", 20))
    small.start()
    small.join(5)  # 70 + 20 fits beside it
    waiting = threading.Thread(target=run, args=("waiting", 50))
    waiting.start()
    time.sleep(0.3)
    assert "waiting in" not in order and memory.held("gpu:0") == 70  # 70 + 50 does not fit: it waits
    release_first.set()
    for t in (big, waiting):
        t.join(5)
    assert order.index("waiting in") > order.index("big out") and memory.held("gpu:0") == 0
    with memory.hold("gpu:0", 500, capacity_mb=100):  # larger than the device, and alone: it runs
        assert memory.held("gpu:0") == 500
    with memory.hold("gpu:1", 90, capacity_mb=100), memory.hold("gpu:0", 90, capacity_mb=100):
        pass  # devices are counted apart


def test_one_that_must_run_alone_waits_for_the_device_to_empty_and_keeps_newcomers_out() -> None:
    memory, order = DeviceMemory(), []
    small_in, release = threading.Event(), threading.Event()

    def run(name: str, alone: bool, started: threading.Event | None = None) -> None:
        with memory.hold("gpu:0", 10, capacity_mb=100, alone=alone):
            order.append(f"{name} in")
            if started is not None:
                started.set()
                release.wait(5)
            order.append(f"{name} out")  # still holding: the next one's "in" can only come after it

    first = threading.Thread(target=run, args=("small", False, small_in))
    first.start()
    assert small_in.wait(5)
    lonely = threading.Thread(target=run, args=("alone", True))
    lonely.start()
    time.sleep(0.2)
    newcomer = threading.Thread(target=run, args=("newcomer", False))
    newcomer.start()
    time.sleep(0.2)
    assert order == ["small in"]  # 10 + 10 would fit, but one waits to run alone
    release.set()
    for t in (first, lonely, newcomer):
        t.join(5)
    assert order.index("alone in") > order.index("small out")
    assert order.index("newcomer in") > order.index("alone out") and memory.held("gpu:0") == 0


def test_an_evaluation_holds_its_share_of_the_device_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """...and until its processes have exited: their device memory is theirs until then (on the H100, holds
    released as the verdict came, before the jobs quit, let the next evaluations in beside 77 GB still held:
    honest L1 kernels and their references ran out of memory, even those run again alone)."""
    from hipforge.execution.evaluation import Evaluation

    held: list[tuple[str, float, float]] = []
    events: list[str] = []
    real, real_finish = device_memory.DEVICE_MEMORY.hold, Evaluation.finish

    @contextmanager
    def recording(device: str, mb: float, capacity_mb: float, alone: bool = False) -> Iterator[None]:
        held.append((device, mb, capacity_mb))
        with real(device, mb, capacity_mb, alone):
            yield
        events.append("released")

    def finish(self: Evaluation, parties: list) -> dict:  # noqa: ANN001
        events.extend(f"{p.name} exited" for p in parties)
        return real_finish(self, parties)

    monkeypatch.setattr(device_memory.DEVICE_MEMORY, "hold", recording)
    monkeypatch.setattr(Evaluation, "finish", finish)
    relu = next(e for e in entries() if e.name == "relu")
    result = evaluate(relu.candidate_source, relu.task_source, EvalConfig(timed_trials=2, warmup=1, gate=False))
    assert result.verdict == Verdict.CORRECT, result.message
    expected = footprint_mb(load_task(relu.task_source, "hipforge_test_relu"), 0)
    assert len(held) == 1 and held[0][0] == "cpu" and held[0][1] == pytest.approx(
        share_mb(expected, 0))  # the cpu backend times with no L2 flush buffer
    assert held[0][2] > 0 and device_memory.DEVICE_MEMORY.held(held[0][0]) == 0
    assert events.index("released") > max(events.index("reference exited"), events.index("candidate exited")), events


@pytest.mark.parametrize(("backend", "message", "runs"), [
    ("cuda", "the reference failed: OutOfMemoryError: CUDA out of memory. Tried to allocate 2.01 GiB", 2),
    ("cuda", "ran out of memory (killed: resident memory over its limit)", 1),  # the host's limit: its own
    ("cpu", "OutOfMemoryError: out of memory", 1),
])
def test_an_evaluation_that_runs_out_of_device_memory_beside_others_is_judged_again_alone(
        monkeypatch: pytest.MonkeyPatch, backend: str, message: str, runs: int) -> None:
    from hipforge.execution.evaluation import Evaluation
    from hipforge.execution.verdict import EvalResult

    alone: list[bool] = []

    def run(self: Evaluation, *_: object) -> EvalResult:
        alone.append(self.owns_device)
        if len(alone) == 1:
            return EvalResult(Verdict.RUNTIME_ERROR, message)
        return EvalResult(Verdict.INCORRECT, "judged on its own merits")

    monkeypatch.setattr(Evaluation, "run", run)
    relu = next(e for e in entries() if e.name == "relu")
    result = evaluate(relu.candidate_source, relu.task_source, EvalConfig(backend=backend, gate=False))
    assert alone == [False, True][:runs]
    assert result.verdict == (Verdict.INCORRECT if runs == 2 else Verdict.RUNTIME_ERROR)
    assert ("rerun" in result.integrity) == (runs == 2)
