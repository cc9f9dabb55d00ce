"""The full-size work profile (FLOPs, bytes) counted on the meta device, within a budget in a check's job."""

from __future__ import annotations

import time

from hipforge.tasks.reference_check import work_profile

TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(128, 256, num_layers=6, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


def get_inputs():
    return [torch.randn(10, {steps}, 128)]


def get_init_inputs():
    return []
'''


def test_a_small_model_is_profiled() -> None:
    profile = work_profile(TASK.format(steps=4), budget_s=30)
    assert profile["flops"] > 0 and profile["full_shapes"] == [[10, 4, 256]]


def test_a_profile_over_its_budget_is_left_out_in_time() -> None:
    """512 steps x 6 layers run op by op on the meta device: tens of seconds unbounded."""
    start = time.monotonic()
    assert work_profile(TASK.format(steps=512), budget_s=1.0) == {}
    assert time.monotonic() - start < 5
