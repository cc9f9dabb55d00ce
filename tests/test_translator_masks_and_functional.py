"""Comparisons as 0/1 masks inside fused kernels (torch.where, masked_fill, a mask times a tensor), the
dtype check that declines a mask PyTorch would return as bool or count as int64, and the functional
forms of group norm, instance norm and global average pooling. Two compiled models on the cpu backend."""

from __future__ import annotations

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import generate
from hipforge.translate.errors import Untranslatable
from tests.test_translator_ops import task

CONFIG = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)


def _correct(source: str) -> None:
    generated = generate(source)
    result = evaluate(generated.source, source, CONFIG)
    assert result.verdict.value == "correct", (result.message[:600], result.compile_log[-1500:])


def test_masks_fuse_as_exact_zero_one_values():
    _correct(task("self.l = nn.Linear(24, 16)",
                  "torch.where(self.l(x) > 0.1, self.l(x), self.l(x) * 0.2).masked_fill(self.l(x) <= -0.5, 3.0) "
                  "+ (self.l(x) != self.l(x).amax(dim=1, keepdim=True)) * self.l(x) "
                  "+ torch.ge(self.l(x), 0.0).eq(x.sum(dim=1, keepdim=True) < 0) * 2.0 "
                  "+ torch.where((x.sum(dim=1) > 0).unsqueeze(1), self.l(x), -self.l(x))",  # a view keeps a mask
                  "[torch.randn(9, 24)]"))


@pytest.mark.parametrize(("forward", "dtype"), [
    ("x > 0", "torch.bool"),  # a mask returned: PyTorch's result is bool, ours would be float
    ("(x > 0).sum(dim=1)", "torch.int64"),  # a count of a mask
    ("((x > 0) + (x < 1)) * x", "torch.bool"),  # two masks added are a logical or in PyTorch
])
def test_a_mask_used_where_pytorch_changes_its_dtype_is_declined(forward: str, dtype: str):
    with pytest.raises(Untranslatable, match=f"unsupported dtype: .*{dtype}"):
        generate(task("pass", forward, "[torch.randn(4, 8)]"))


def test_functional_group_norm_instance_norm_and_global_pooling():
    _correct(task("self.w = nn.Parameter(torch.randn(8)); self.b = nn.Parameter(torch.randn(8))",
                  "F.adaptive_avg_pool2d(F.group_norm(x, 4, self.w, self.b), 1) "
                  "+ F.instance_norm(x * 2.0, weight=self.w, bias=self.b).mean(dim=(2, 3), keepdim=True) "
                  "+ F.adaptive_avg_pool2d(torch.relu(x), (1, 1))",
                  "[torch.randn(3, 8, 7, 6)]"))
    with pytest.raises(Untranslatable, match=r"adaptive average pooling to \(2, 2\)"):
        generate(task("pass", "F.adaptive_avg_pool2d(x, (2, 2))", "[torch.randn(3, 8, 7, 6)]"))
