"""The check phase holds a few output-sized tensors per process, not one per trial, calibration trial or
adversarial kind: KernelBench L2/5 (a 2 GB output) ran out of an 80 GB H100 alone with 47 GB allocated in the
candidate's process. Measured on the cpu backend, where the jobs' resident sets are their tensors (outputs of
256 MB are mapped and unmapped whole by the C allocator, with no cache between them)."""

from __future__ import annotations

import gc
import os
import threading
import weakref
from pathlib import Path

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.execution.forward_outputs import noop_module
from hipforge.execution.verdict import Verdict
from hipforge.sandbox.server import child_pids

N = 1 << 24  # input elements; the output has four times as many: 256 MB
OUTPUT_MB = N * 4 * 4 / 2**20
# output-sized tensors one job may hold at its peak: the candidate's refill probe keeps four copies besides its
# live output (the reference's float64 twin about as much). Before, the reference held 9.0 in the variants'
# float64 phase and the candidate 11.5 through calibration (a no-op's tensors lived until the next gc)
MAX_OUTPUTS = 8

TASK = f'''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([0.5, -1.0, 2.0, 0.25]))

    def forward(self, x):
        return torch.tanh(x.unsqueeze(-1) * self.scale)


def get_inputs():
    return [torch.randn({N})]


def get_init_inputs():
    return []
'''

CANDIDATE = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = """#include <torch/extension.h>
#include <hip/hip_runtime.h>
__global__ void spread(const float* __restrict__ x, const float* __restrict__ s, float* __restrict__ y, long n) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        y[i] = tanhf(x[i / 4] * s[i % 4]);
}
torch::Tensor run(torch::Tensor x, torch::Tensor s) {
    auto y = torch::empty({x.numel(), 4}, x.options());
    hipLaunchKernelGGL(spread, dim3(64), dim3(256), 0, 0, x.data_ptr<float>(), s.data_ptr<float>(),
                       y.data_ptr<float>(), (long)y.numel());
    return y;
}
"""
ext = load_inline(name="hipforge_test_check_memory", cpp_sources=SOURCE, functions=["run"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([0.5, -1.0, 2.0, 0.25]))

    def forward(self, x):
        return ext.run(x.contiguous(), self.scale)
'''


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


def _cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


class JobPeaks:
    """Each sandbox job's peak resident set (VmHWM) above its server's at the fork, polled from outside."""

    def __init__(self) -> None:
        self.grown: dict[int, float] = {}
        self.base: dict[int, float] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)

    def poll(self) -> None:
        while not self.done.wait(0.02):
            for server, job in self.jobs():
                try:
                    self.base.setdefault(job, _status_mb(server, "VmRSS"))
                    self.grown[job] = _status_mb(job, "VmHWM") - self.base[job]
                except OSError:  # it exited between the listing and the read
                    pass

    def jobs(self) -> list[tuple[int, int]]:
        """(server, job): a job is a fork of its server, so it has its server's command line."""
        pairs, todo = [], [os.getpid()]
        while todo:
            pid = todo.pop()
            try:
                kids = child_pids(pid)
                server = b"hipforge.sandbox.server" in _cmdline(pid)
                pairs += [(pid, k) for k in kids if server and _cmdline(k) == _cmdline(pid)]
            except (OSError, IndexError):
                continue
            todo += kids
        return pairs


def test_no_calibration_forward_outlives_its_module_without_a_garbage_collection() -> None:
    """Its tensors go with the module, not at the next full collection: a class made per no-op sat in a
    reference cycle holding them (10 calibration trials, 10 outputs)."""
    import torch

    gc.disable()
    try:
        template = torch.zeros(8)
        gone = weakref.ref(template)
        module = noop_module([template], fresh=True)
        module()
        del module, template
        assert gone() is None
    finally:
        gc.enable()


def test_the_check_phase_holds_a_few_outputs_per_process() -> None:
    peaks = JobPeaks()
    peaks.thread.start()
    try:
        result = evaluate(CANDIDATE, TASK, EvalConfig(timed_trials=1, warmup=1, gate=False, second_size=False))
    finally:
        peaks.done.set()
        peaks.thread.join()
    assert result.verdict == Verdict.CORRECT, result.message + result.traceback
    assert result.integrity["checked"]["adversarial"] >= 1 and result.integrity["checked"]["refill"] == 1
    assert len(peaks.grown) >= 2, peaks.grown  # the reference's job and the candidate's
    held = {job: round(mb / OUTPUT_MB, 1) for job, mb in peaks.grown.items()}
    assert max(held.values()) < MAX_OUTPUTS, f"output-sized tensors at each job's peak: {held}"
