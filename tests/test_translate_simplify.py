"""The translator's algebra (hipforge/translate/ir/simplify.py): each rewrite fires where it holds for every
float32 input at every problem size, and stays off where it would rest on finiteness, on a size taken from
the task's numbers, or on bounds it cannot compare. The rules are checked against PyTorch on inf and NaN;
one compiled model checks the rewritten kernels on the cpu backend."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from hipforge.agents.base import AgentTask, Candidate
from hipforge.agents.translator.offline import OfflineTranslator
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.tasks import smoke_scale
from hipforge.translate import generate
from hipforge.translate.ir.simplify import _clamp, _clamp_clamp
from hipforge.translate.ir.values import Val, ew
from hipforge.translate.lower.ops import clamp
from tests.test_translator_ops import task

SPECIAL = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 0.3, -0.7, 2.5, -3.0, 1e30, -1e-30])


def rewrites(forward: str, inputs: str = "[torch.randn(16, 32, 8)]", init: str = "pass", init_inputs: str = "[]"):
    return generate(task(init, forward, inputs, init_inputs)).rewrites


# --- unit-reduce and unit-var -----------------------------------------------------------------------------

def test_reductions_over_a_dim_a_keepdim_reduction_made_1_are_their_operand():
    notes = rewrites("x.sum(dim=1, keepdim=True).amax(dim=1, keepdim=True).mean(dim=1, keepdim=True)")
    assert notes == ("unit-reduce: max over dim 1 of (16, 1, 8) (1 by construction) is its operand",
                     "unit-reduce: mean over dim 1 of (16, 1, 8) (1 by construction) is its operand")


def test_softmax_and_logsumexp_over_such_a_dim_lose_their_reductions():
    gen = generate(task("pass", "torch.softmax(x.mean(dim=(1, 2), keepdim=True), dim=2) + "
                                "torch.logsumexp(x.sum(dim=1, keepdim=True), dim=1, keepdim=True)",
                        "[torch.randn(16, 32, 8)]"))
    assert sum(n.startswith("unit-reduce: max") for n in gen.rewrites) == 2
    assert sum(n.startswith("unit-reduce: sum") for n in gen.rewrites) == 2
    assert "Rewrites proved for every input: unit-reduce" in gen.source  # the kernel's reader sees them too


def test_a_1_from_the_task_numbers_is_not_1_by_construction():
    assert rewrites("torch.softmax(x, dim=1)", "[torch.randn(16, 1, 8)]") == ()  # get_inputs' 1: any size later
    # a parameter's 1 comes from get_init_inputs: broadcast against it, the dim is no longer provably 1
    assert rewrites("(x.mean(dim=(2, 3), keepdim=True) + self.b).sum(dim=(2, 3), keepdim=True)",
                    "[torch.randn(4, 8, 6, 6)]", "self.b = nn.Parameter(torch.randn(a[0], 1, 1))", "[8]") == ()
    assert rewrites("x.sum(dim=2, keepdim=True).mean(dim=1, keepdim=True)") == ()  # another dim than the 1


def test_an_unsqueezed_dim_is_1_by_construction_and_a_reduction_without_keepdim_becomes_a_view():
    assert rewrites("x.unsqueeze(1).amax(dim=1, keepdim=True) * 2.0") == (
        "unit-reduce: max over dim 1 of (16, 1, 32, 8) (1 by construction) is its operand",)
    gen = generate(task("pass", "(x * 2.0).sum(dim=1, keepdim=True).mean(dim=1)", "[torch.randn(16, 32, 8)]"))
    assert gen.rewrites[0].endswith("is its operand, squeezed") and ".squeeze((1,))" in gen.source


def test_a_squeeze_inside_one_fused_kernel_is_not_worth_a_cut():
    assert rewrites("(x * 2.0).sum(dim=1, keepdim=True).mean(dim=1) + 1.0") == ()


def test_a_model_that_would_be_all_rewrites_is_left_alone():
    gen = generate(task("pass", "x.unsqueeze(1).sum(dim=1)", "[torch.randn(16, 32, 8)]"))
    assert gen.rewrites == () and gen.kernels


def test_variance_over_a_unit_dim_is_x_minus_x():
    notes = rewrites("F.layer_norm(x.sum(dim=2, keepdim=True), (1,))")
    assert any(n.startswith("unit-var: variance over dim 2") for n in notes)


def test_torch_reductions_over_a_size_1_dim_match_the_rewrites_on_inf_and_nan():
    x = SPECIAL.view(-1, 1)
    for fn in (torch.sum, torch.mean, torch.amax, torch.amin, torch.prod):
        torch.testing.assert_close(fn(x, dim=1, keepdim=True), x, equal_nan=True, atol=0, rtol=0)
    torch.testing.assert_close(x.var(dim=1, unbiased=False, keepdim=True), x - x, equal_nan=True, atol=0, rtol=0)
    # softmax over it is exp(x - x) / exp(x - x): 1 for finite x only, never a constant 1
    torch.testing.assert_close(torch.softmax(x, 1), torch.exp(x - x) / torch.exp(x - x), equal_nan=True)
    assert torch.softmax(x, 1).isnan().sum() == 3


def test_the_candidate_params_record_the_rewrites():
    source = task("pass", "x.sum(dim=1, keepdim=True).mean(dim=1, keepdim=True)", "[torch.randn(16, 32)]")
    out = OfflineTranslator().translate(AgentTask("t", "t", source))
    assert isinstance(out, Candidate) and out.params["rewrites"] == [
        "unit-reduce: mean over dim 1 of (16, 1) (1 by construction) is its operand"]
    plain = OfflineTranslator().translate(AgentTask("t", "t", task("pass", "x * 2.0", "[torch.randn(16, 32)]")))
    assert isinstance(plain, Candidate) and plain.params["rewrites"] == []


# --- clamp-clamp ------------------------------------------------------------------------------------------

def test_a_clamp_inside_a_wider_one_keeps_only_the_narrower():
    assert rewrites("torch.clamp(torch.clamp(x, -0.5, 0.5), -1.0, 1.0)") == (
        "clamp-clamp: [-0.5, 0.5] inside [-1.0, 1.0]: the outer clamp is dropped",)
    assert rewrites("F.relu6(torch.relu(x))") == (
        "clamp-clamp: [0.0, 6.0] inside [0.0, inf]: the inner clamp is dropped",)
    # the other way round the outer one stays: dropping it would widen the result
    assert rewrites("torch.clamp(torch.clamp(x, -1.0, 1.0), -0.5, 0.5)") == (
        "clamp-clamp: [-0.5, 0.5] inside [-1.0, 1.0]: the inner clamp is dropped",)


def test_clamps_that_only_overlap_or_whose_bounds_cannot_be_compared_stay():
    assert rewrites("torch.clamp(torch.clamp(x, 0.0, 2.0), 1.0, 3.0)") == ()
    assert rewrites("torch.clamp(torch.clamp(x, 1.0, 0.0), -5.0, 5.0)") == ()  # inner min > max: a constant 0
    held = {"init": "self.lo = a[0]; self.hi = a[1]", "init_inputs": "[-0.5, 0.5]"}
    assert rewrites("torch.clamp(torch.clamp(x, self.lo, self.hi), -1.0, 1.0)", **held) == ()
    same = rewrites("torch.clamp(torch.clamp(x, self.lo, self.hi), self.lo, self.hi)", **held)
    assert len(same) == 1 and "self.lo" in same[0]  # the same attribute twice: equal whatever its value


BOUNDS = (-math.inf, -1.0, -0.5, 0.0, 0.5, 1.0, math.inf)


@pytest.mark.parametrize(("a", "b"), list(itertools.product(BOUNDS, BOUNDS)))
def test_every_clamp_clamp_rewrite_matches_torch_on_inf_and_nan(a: float, b: float):
    """For each pair of bounds and each outer pair, where the rule fires, torch agrees on every special value."""
    x = Val("input", (11,), ref="x")
    for c, d in itertools.product(BOUNDS, BOUNDS):
        outer = clamp(_clamped(x, a, b), *_sides(c, d))
        found = _clamp_clamp(outer, outer.args)
        if found is None:
            continue
        new, _ = found
        lo, hi = _clamp(new.fn, new.args)
        assert new.args[0] is x
        expected = torch.clamp(torch.clamp(SPECIAL, *_sides(a, b)), *_sides(c, d))
        torch.testing.assert_close(torch.clamp(SPECIAL, *_sides(lo, hi)), expected, equal_nan=True, atol=0, rtol=0)


def _sides(lo: float, hi: float) -> tuple[float | None, float | None]:
    return (None if lo == -math.inf else lo), (None if hi == math.inf else hi)


def _clamped(x: Val, lo: float, hi: float) -> Val:
    return clamp(x, *_sides(lo, hi)) if _sides(lo, hi) != (None, None) else ew("({0} * 1.0f)", x)


def test_rewritten_kernels_are_correct_on_cpu():
    source = task("pass", "torch.softmax(torch.clamp(torch.clamp(x, -1.0, 1.0), -0.5, 0.5).sum(dim=1, keepdim=True), "
                          "dim=1) + F.layer_norm(x.mean(dim=2, keepdim=True), (1,)) * x", "[torch.randn(8, 24, 40)]")
    generated = generate(source)
    assert len(generated.rewrites) >= 4
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    result = evaluate(generated.source, smoke_scale(source).source, config)
    assert result.verdict.value == "correct", (result.message, result.compile_log[-2000:])
