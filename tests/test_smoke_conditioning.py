"""The smoke ladder skips sizes where the reference itself is too ill-conditioned to judge a kernel at fp32's
tolerance (its float32 output farther than 1e-4 from float64): a correct kernel would fail there by chance."""

from __future__ import annotations

from hipforge.tasks import check_task, smoke_ladder

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = SCALE / n

    def forward(self, x):
        return torch.sin(x * self.scale)


n = 8192


def get_inputs():
    return [torch.randn(16, n)]


def get_init_inputs():
    return [n]
'''


def test_an_ill_conditioned_rung_gives_way_to_larger_sizes():
    benign = TASK.replace("SCALE", "4.0")
    run = check_task(benign)
    assert run.constants == smoke_ladder(benign)[0].changed and run.fp64_gap < 1.0  # the smallest rung
    # sin of arguments near 1e6 / n: at n = 16 float32 rounding of the argument alone is far above 1e-4
    touchy = TASK.replace("SCALE", "1e6")
    run = check_task(touchy)
    assert run.fp64_gap is not None and run.fp64_gap <= 1.0
    assert run.constants != smoke_ladder(touchy)[0].changed
