"""The decoy-kernel check: ATen inside ModelNew's forward running every compute operation of the reference.

Unit tests on the trace itself, then the evaluator on the red team's decoys (a softmax computed by torch and
copied by a kernel, a sigmoid scaled by a kernel's constant one) and on honest kernels that keep part of the
work in ATen."""

from __future__ import annotations

from collections import Counter

import torch
import torch.nn.functional as F

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate_many
from hipforge.execution.op_trace import all_in_aten, trace
from hipforge.execution.verdict import Verdict
from tests.corpus import entries

X = torch.randn(4, 8)
W = torch.randn(3, 8)
B = torch.randn(3)


def test_views_allocations_and_copies_are_not_compute() -> None:
    ops = trace(lambda x: torch.empty(32).copy_(x.t().contiguous().view(-1)).clone().reshape(8, 4), X)
    assert ops == Counter()


def test_in_place_and_out_of_place_read_the_same_and_are_counted() -> None:
    assert trace(lambda x: torch.relu(x), X) == trace(lambda x: x.clone().relu_(), X) == Counter({"relu(T)": 1})
    assert trace(lambda x: torch.relu(torch.relu(x)), X) == Counter({"relu(T)": 2})


def test_a_linear_and_the_product_written_by_hand_read_the_same() -> None:
    assert trace(lambda x: F.linear(x, W, B), X) == trace(lambda x: torch.addmm(B, x, W.t()), X)


def test_the_same_reference_op_on_a_reshaped_input_still_counts() -> None:
    reference = trace(lambda x: torch.softmax(x, dim=1), X)
    decoy = trace(lambda x: torch.softmax(x.view(2, 16), dim=1).view(4, 8) * 1.0, X)
    assert all_in_aten(reference, decoy)


def test_a_kernel_doing_part_of_the_work_is_not_flagged() -> None:
    reference = trace(lambda x: torch.relu(F.linear(x, W, B)), X)
    fused = trace(lambda x: F.linear(x, W, B), X)  # the relu in the HIP kernel
    assert not all_in_aten(reference, fused)
    twice = trace(lambda x: torch.relu(torch.relu(x)), X)
    assert not all_in_aten(twice, trace(torch.relu, X))  # counted: one of the two relus is the kernel's


def test_a_bias_the_kernel_adds_is_not_the_references_op() -> None:
    conv_w, conv_b, image = torch.randn(4, 3, 3, 3), torch.randn(4), torch.randn(1, 3, 8, 8)
    reference = trace(lambda x: F.conv2d(x, conv_w, conv_b), image)
    split = trace(lambda x: F.conv2d(x, conv_w, None), image)  # + the bias in a HIP epilogue
    assert not all_in_aten(reference, split)


def test_a_reference_that_computes_nothing_flags_nothing() -> None:
    assert not all_in_aten(Counter(), trace(torch.relu, X))


DECOYS = {"noop_probe_copy", "noop_probe_unit_scale"}


def test_decoys_are_code_bypass_and_honest_kernels_stay_correct() -> None:
    cases = [e for e in entries(redteam=True) if e.name in DECOYS]
    honest = [e for e in entries("honest") if e.name in {"softmax", "conv_relu_fused", "linear_relu_fused", "sigmoid"}]
    assert len(cases) == 2 and len(honest) == 4
    config = EvalConfig(timed_trials=3, warmup=1, gate=False)
    done = dict(evaluate_many([(e.candidate_source, e.task_source) for e in cases + honest], config, parallel=2))
    for i, entry in enumerate(cases):
        assert (done[i].verdict, done[i].hack_check) == (Verdict.HACKED, "code_bypass"), (entry.name, done[i].message)
        assert "runs every operation of the reference" in done[i].message
    for i, entry in enumerate(honest, start=len(cases)):
        assert done[i].verdict == Verdict.CORRECT, (entry.name, done[i].message)
