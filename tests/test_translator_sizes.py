"""Size arithmetic (e // heads, b * t), reshapes that split a dim by sizes read from tensors, permute and
basic indexing (x[0], x[:, -1], x[:, :n]): the forward is written over the input's sizes, so a kernel
translated at one size is correct at another. The model's constructor floats (self.scale, nn.Hardtanh's
bounds) reach the kernels at run time, so it is also correct at other init arguments, and at the task's
second size (hipforge.tasks.resize). Compiled models on the cpu backend."""

from __future__ import annotations

import operator
import re
from typing import Any

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.tasks.library import load_library
from hipforge.tasks.resize import describe, second_size
from hipforge.tasks.smoke import smoke_scale
from hipforge.translate import generate
from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.sizes import Size, arithmetic, as_number, dim, render
from hipforge.translate.ir.values import Val
from tests.test_resize import kernelbench_problems
from tests.test_translator_ops import HEADER, task

ATTENTION = HEADER + """import math


class Model(nn.Module):
    def __init__(self, embed, heads, longest):
        super().__init__()
        self.embed, self.heads = embed, heads
        self.qkv = nn.Linear(embed, 3 * embed)
        self.register_buffer("mask", torch.tril(torch.ones(longest, longest)))

    def forward(self, x):
        b, t, e = x.shape
        head = e // self.heads
        q, k, v = self.qkv(x).split(self.embed, dim=2)
        k = k.view(b, t, self.heads, head).permute(0, 2, 1, 3)
        q, v = (u.reshape(b, t, self.heads, head).transpose(1, 2) for u in (q, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        scores = scores.masked_fill(self.mask[:t, :t] == 0, float("-inf"))
        y = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b * t, e)
        first, rest = y.narrow(1, 0, 1), y[:, 1 : e // 2]
        out = torch.cat([torch.zeros_like(first), torch.relu(rest) * first.expand(-1, rest.size(1))], dim=1)
        halves = y.chunk(2, dim=1)[0] + y.reshape(b * t, 2, e // 2).unbind(1)[1]
        return out + halves + x.reshape(b * t, e).select(1, 0).unsqueeze(1)


batch, seq, embed, heads, longest = {sizes}


def get_inputs():
    return [torch.randn(batch, seq, embed)]


def get_init_inputs():
    return [embed, heads, longest]
"""


def test_attention_written_over_sizes_is_correct_at_another_size():
    generated = generate(ATTENTION.format(sizes="4, 24, 64, 4, 32"))
    forward = generated.source.split("def forward")[1]
    assert ".split(self.embed, 2)" in forward and "// self.heads)" in forward and ".permute(0, 2, 1, 3)" in forward
    assert "self.mask[:x.shape[1], :x.shape[1]]" in forward
    assert not {"24", "64", "32", "96"} & set(re.findall(r"(?<!\w)\d+", forward))  # no size frozen at its value
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    result = evaluate(generated.source, ATTENTION.format(sizes="3, 10, 40, 5, 16"), config)
    assert result.verdict.value == "correct", (result.message[:600], result.compile_log[-1500:])


def test_int_attributes_in_python_control_flow_are_traced_as_their_values():
    source = task("self.times = a[0]", "x", "[torch.randn(4, 8)]", "[3]").replace(
        "return x", "for _ in range(self.times):\n            x = torch.relu(x) + 1.0\n        return x")
    forward = generate(source).source.split("def forward")[1]
    assert "hip_ext." in forward and "self.times" not in forward


def _table(a: Any, b: Any) -> str:
    return "table"


def test_size_arithmetic_keeps_value_and_expression_over_merged_sources():
    x, y = Val("input", (8, 6), ref="x"), Val("input", (5,), ref="y")
    mul, floordiv = arithmetic(_table, operator.mul), arithmetic(_table, operator.floordiv)
    total = floordiv(mul(dim(x, 0), dim(y, -1)), 4)
    assert isinstance(total, Size) and total == 10 and total.sources == (x, y)
    sources = [y]  # a caller's slot {0} stays put; x joins after it
    assert render([total, 3, -1], sources) == ["(({1}.shape[0] * {0}.shape[0]) // 4)", "3", "-1"]
    assert as_number(total).ref == "x.new_full((), float(((x.shape[0] * y.shape[0]) // 4)))"
    assert mul(dim(x, 0), 2.0) == "table" and mul(3, 4) == "table"  # a float, or no Size: the table's entry


@pytest.mark.parametrize(("forward", "reason"), [
    ("x[:, x.argmax(1)] * 2.0", "indexing by a tensor"),  # advanced indexing is a gather, not a view
    ("x.view(4, -1, 2) * 2.0", "splits a dim"),  # plain numbers may be a problem size at its full value
    ("x // 2.0", "floor division or modulo of tensors"),
])
def test_indexing_and_reshapes_that_are_not_views_over_sizes_are_declined(forward: str, reason: str):
    with pytest.raises(Untranslatable, match=reason):
        generate(task("pass", forward, "[torch.randn(4, 8)]"))


SCALED = HEADER + """class Model(nn.Module):
    def __init__(self, features, scale, multiplier, low, high, slope):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale, self.multiplier = scale, multiplier
        self.clip = nn.Hardtanh(low, high)
        self.act = nn.LeakyReLU(slope)

    def forward(self, x):
        y = self.linear(x) * self.scale + x * (1.0 / self.multiplier)
        y = torch.clamp(self.clip(y), min=-self.multiplier)
        return self.act(y) + F.softplus(x, beta=self.scale)


batch_size, features = {sizes}
scale, multiplier, low, high, slope = {floats}


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, scale, multiplier, low, high, slope]
"""


def test_init_floats_reach_the_kernels_at_run_time_and_hold_at_other_init_arguments():
    traced = SCALED.format(sizes="6, 32", floats="0.5, 1.25, -0.75, 0.625, 0.2")
    generated = generate(traced)
    hip = generated.source.split('HIP_SOURCE = r"""')[1].split('"""')[0]
    assert not {"0.5f", "1.25f", "0.8f", "-0.75f", "0.625f", "0.2f"} & set(re.findall(r"-?[\d.]+f", hip)), hip
    forward = generated.source.split("def forward")[1]
    for attribute in ("self.scale", "(1.0 / self.multiplier)", "self.clip.min_val", "self.act.negative_slope"):
        assert attribute in forward, forward
    other = SCALED.format(sizes="5, 24", floats="1.5, 0.5, -1.5, 0.25, 0.05")
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    result = evaluate(generated.source, other, config)
    assert result.verdict.value == "correct", (result.message[:600], result.compile_log[-1500:])


def test_a_float_attribute_in_python_control_flow_is_traced_as_its_value():
    source = task("self.scale = a[0]", "x", "[torch.randn(4, 8)]", "[0.5]").replace(
        "return x", "return torch.relu(x) * (2.0 if self.scale > 0 else 3.0)")
    hip, forward = generate(source).source.split("def forward")
    assert "2.0f" in hip and "self.scale" not in forward


@pytest.mark.parametrize("name", ["elementwise/clamp_scale_bias", "elementwise/sigmoid_scale", "elementwise/softplus",
                                  "losses/smooth_l1", "conv/conv2d_bias_sigmoid"])
def test_library_tasks_with_init_floats_translated_at_one_size_are_correct_at_the_second(name: str):
    source = smoke_scale(next(t.source for t in load_library() if t.name == name)).source
    resized = second_size(source)
    assert resized is not None and any(type(old) is float for old, _ in resized.changed.values())
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    result = evaluate(generate(source).source, resized.source, config)
    assert result.verdict.value == "correct", (describe(resized.changed), result.message[:600])


def test_arithmetic_on_model_numbers_is_written_over_the_model():
    source = task("self.heads, self.shift = a", "x / math.sqrt(self.heads) - (self.shift * 2.0 - 1.0)",
                  "[torch.randn(4, 8)]", "[4, 0.25]").replace("import torch\n", "import math\nimport torch\n", 1)
    forward = generate(source).source.split("def forward")[1]
    assert "float((self.heads ** 0.5))" in forward and "float(((self.shift * 2.0) - 1.0))" in forward, forward


@pytest.mark.parametrize("problem", ["12_Gemm_Multiply_LeakyReLU", "16_ConvTranspose2d_Mish_Add_Hardtanh_Scaling",
                                     "31_Conv2d_Min_Add_Multiply"])
def test_kernelbench_l2_translations_hold_at_the_second_size(problem: str):
    """Init args as attributes (floats, and an int scale), as nn.LeakyReLU's slope and nn.Hardtanh's bounds,
    and through torch.tensor(self.constant_value): each of these was a literal in the kernel once, and
    wrong at the second size."""
    source = smoke_scale(kernelbench_problems()[f"kernelbench/L2/{problem}"]).source
    resized = second_size(source)
    assert resized is not None
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    result = evaluate(generate(source).source, resized.source, config)
    assert result.verdict.value == "correct", (describe(resized.changed), result.message[:600])
