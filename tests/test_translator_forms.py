"""Spellings KernelBench models use: torch.multiply/subtract/divide, a number made a tensor on an input's
device (torch.tensor(0.0, device=x.device)), and operands that broadcast against each other with none of
them at the output's shape ((B, 1) + (1, C, 1, 1) -> (1, C, B, 1)). One compiled model on the cpu backend,
evaluated at another batch size than it was translated for."""

from __future__ import annotations

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import generate
from hipforge.translate.errors import Untranslatable
from tests.test_translator_ops import task

FORMS = task("self.bias = nn.Parameter(torch.randn(1, 6, 1, 1))",
             "torch.min(torch.min(torch.multiply(torch.subtract(x, 0.5), torch.divide(x, 2.0)), dim=1, keepdim=True)[0]"
             " + self.bias, torch.tensor(0.25, device=x.device)).negative()",
             "[torch.randn(5, 8)]")


def test_aliases_device_scalars_and_mutual_broadcasts_are_correct():
    generated = generate(FORMS)
    assert "std::vector<int64_t> shape(4, 1);" in generated.source  # the output shape, broadcast at run time
    assert "x.new_full((), 0.25)" in generated.source
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    result = evaluate(generated.source, FORMS.replace("torch.randn(5, 8)", "torch.randn(7, 8)"), config)
    assert result.verdict.value == "correct", (result.message[:600], result.compile_log[-1500:])


@pytest.mark.parametrize("forward", ["x * torch.tensor(2, device=x.device)",  # int64 in PyTorch
                                     "x * torch.tensor([1.0, 2.0], device=x.device).sum()"])
def test_tensors_built_from_other_than_a_float_number_are_declined(forward: str):
    with pytest.raises(Untranslatable, match="torch.tensor of something other than a float32 number"):
        generate(task("pass", forward, "[torch.randn(4, 8)]"))
