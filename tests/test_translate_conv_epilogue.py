"""GenParams.conv_epilogue: "fused" has our conv kernel apply the elementwise work after a convolution before its
store (kernels/conv_epilogue.py), one launch; "aten" (the default) keeps today's split, byte for byte.

Small level-2-like models, each through both conv kernels' stores: the implicit GEMM (dense channels) and the
direct kernel with 4 and 1 output channels per thread, forward and transposed, grouped, strided, padded and
dilated. Per-channel operands hold distinct values, so an epilogue applied at the wrong channel or element
is wrong. One cpu-backend build per case (~20-60 s on two busy cores); translation alone is milliseconds.
"""

from __future__ import annotations

import pytest

from hipforge.agents.base import AgentTask
from hipforge.agents.evolver.offline import CHOICES, FAVOURED
from hipforge.agents.translator.offline import OfflineTranslator
from hipforge.execution import gate
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import GenParams, generate

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
FUSED = GenParams(conv_epilogue="fused")
needs_gate = pytest.mark.skipif(not gate.available(), reason="clang-22 / HIP headers not installed")


def task(init: str, forward: str, inputs: str, args: str = "x") -> str:
    """A KernelBench-format task; `init` and `forward` are lines of __init__ and forward (8 spaces in)."""
    return (HEADER + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        {init}\n\n    def forward(self, {args}):\n        {forward}\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n")


CASES = {
    # dense channels: the implicit-GEMM store; the conv's bias, a per-channel bias, ReLU, a scalar multiply
    "conv2d_bias_relu_multiply": task(
        "self.conv = nn.Conv2d(8, 32, 3, stride=2, padding=1)\n        self.bias = nn.Parameter(torch.randn(32, 1, 1))",
        "return torch.relu(self.conv(x) + self.bias) * 0.75", "[torch.randn(2, 8, 11, 13)]"),
    # 6 output channels: the direct kernel, one channel per thread; a per-channel multiply and a clamp
    "conv3d_channel_multiply_clamp": task(
        "self.conv = nn.Conv3d(3, 6, (2, 3, 3), stride=(1, 2, 1), padding=(1, 0, 2), dilation=(1, 1, 2))\n"
        "        self.scale = nn.Parameter(torch.randn(6, 1, 1, 1))",
        "return torch.clamp(self.conv(x) * self.scale, min=-0.5, max=0.8)", "[torch.randn(2, 3, 5, 9, 8)]"),
    # strided transposed: the direct gather, 4 channels per thread; the conv's output read twice (swish)
    "conv_transpose2d_scalar_ops": task(
        "self.conv = nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1, output_padding=1)\n        self.s = 1.5\n"
        "        self.shift = nn.Parameter(torch.randn(8, 1, 1))",
        "y = self.conv(x) * self.s\n        return torch.sigmoid(y) * y - self.shift", "[torch.randn(2, 4, 6, 7)]"),
    # stride-1 transposed with dense channels: the implicit GEMM through the flipped filter
    "conv_transpose3d_scale_clamp": task(
        "self.conv = nn.ConvTranspose3d(4, 32, 3, padding=1)",
        "return torch.clamp(self.conv(x) * 2.0, min=-1.0, max=1.0)", "[torch.randn(2, 4, 3, 5, 4)]"),
    # grouped, dilated, no conv bias: a conv-shaped forward input, and one broadcast along the width alone
    "grouped_conv_residual": task(
        "self.conv = nn.Conv2d(8, 12, 3, padding=2, dilation=2, groups=4, bias=False)\n"
        "        self.w = nn.Parameter(torch.randn(10))",
        "return F.gelu(self.conv(x) + skip) * self.w", "[torch.randn(2, 8, 7, 10), torch.randn(2, 12, 7, 10)]",
        args="x, skip"),
}

# a reduction after the conv (mean over channels): outside the epilogue's scope, today's split with the reason
REDUCED = task("self.conv = nn.Conv2d(4, 8, 3)", "return torch.relu(self.conv(x)).mean(dim=1, keepdim=True) * 2.0",
               "[torch.randn(2, 4, 9, 9)]")


@pytest.fixture(scope="module")
def fused() -> dict:
    return {name: generate(source, FUSED) for name, source in CASES.items()}


def test_fused_is_one_kernel_without_an_aten_conv(fused):
    for name, gen in fused.items():
        call, ret = (line.strip() for line in gen.source.split("def forward")[1].splitlines()[1:3])
        assert gen.kernels == ("conv_epilogue_0",) and gen.strategy == "conv_epilogue", name
        assert call.startswith("t0 = hip_ext.conv_epilogue_0(x, self.conv.weight") and ret == "return t0", name
        assert "F.conv" not in gen.source and gen.choices == {"conv_epilogue": "fused"}, name
    # per-channel operands are read at the store's output channel, in both kernels; others by their span
    assert "in1[o], in2[o]" in fused["conv2d_bias_relu_multiply"].source  # the implicit GEMM's store
    assert "in1[oc0 + j], in2[0], in3[oc0 + j]" in fused["conv_transpose2d_scalar_ops"].source  # the direct one's
    assert "hf_bcast((n * OC + oc0 + j) * out_plane + pos, inner_3_4, count_3_4)" in \
        fused["grouped_conv_residual"].source


def test_aten_is_todays_split():
    for source in CASES.values():
        today = generate(source)
        assert generate(source, GenParams(conv_epilogue="aten")).source == today.source
        assert today.strategy == "fused-around-aten" and "F.conv" in today.source
        assert "conv_epilogue" not in today.choices


def test_a_reduction_after_the_conv_falls_back_with_its_reason():
    gen = generate(REDUCED, FUSED)
    assert gen.source == generate(REDUCED).source and "F.conv2d" in gen.source
    assert gen.choices == {"conv_epilogue": "aten (a reduction follows it in its fused kernel)"}
    # the candidate's params, what a user sees, carry what became of the request
    made = OfflineTranslator(params=FUSED).translate(AgentTask("t", "reduced", REDUCED))
    assert made.params["conv_epilogue"] == gen.choices["conv_epilogue"]


def test_the_choice_is_validated_and_evolved():
    with pytest.raises(ValueError, match="conv_epilogue must be one of aten, fused"):
        GenParams(conv_epilogue="epilogue")
    assert CHOICES["conv_epilogue"] == ("aten", "fused") and "conv_epilogue" in FAVOURED["memory-bound"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_is_correct_on_cpu(name: str, fused):
    _correct(fused[name].source, CASES[name])


def test_the_fallback_is_correct_on_cpu():
    _correct(generate(REDUCED, FUSED).source, REDUCED)


def _correct(candidate: str, source: str) -> None:
    config = EvalConfig(backend="cpu", timed_trials=1, warmup=0, gate=False, time_compiled_ref=False)
    result = evaluate(candidate, source, config)
    assert result.verdict.value == "correct", (result.message[:2000], result.compile_log[-2000:])


@needs_gate
def test_fused_kernels_compile_for_gfx950(fused):
    for name, gen in fused.items():
        result = gate.gate_candidate(gen.source)
        assert result.ok, (name, result.log[-2000:])
