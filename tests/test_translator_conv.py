"""Convolutions in the offline translator: single-op conv models (1-, 2-, 3-d, transposed, grouped,
depthwise, strided, padded, dilated, asymmetric, output_padding, bias on and off, module and functional
forms, chains like depthwise-separable) get HIP kernels of their own, correct on the cpu backend at
other sizes than they were translated for; a conv head with work around it stays in ATen, the work fused.

One build (~40-70 s on two busy cores); translation alone is milliseconds. The KernelBench conv tasks
themselves are measured by scripts/kernelbench_run.py, too slow for a test.
"""

from __future__ import annotations

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate_many
from hipforge.translate import generate
from hipforge.translate.errors import Untranslatable

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

# Every kernel path in one build: a grouped conv (asymmetric kernel, stride, padding, dilation; no
# bias) and a strided grouped transposed conv (output_padding, 3 channels per group) take the direct
# kernels, 4 and 1 output channels per thread; a pointwise conv and a stride-1 grouped transposed conv
# have the channels for the implicit GEMM (the latter through the flipped filter).
CONV3D_CHAIN = HEADER + '''class Model(nn.Module):
    def __init__(self, in_channels, mid_channels, wide, out_channels, groups):
        super().__init__()
        self.down = nn.Conv3d(in_channels, mid_channels, (2, 3, 5), stride=(1, 2, 1), padding=(1, 1, 2),
                              dilation=(1, 2, 1), groups=groups, bias=False)
        self.point = nn.Conv3d(mid_channels, wide, 1)
        self.mix = nn.ConvTranspose3d(wide, out_channels, 3, padding=(1, 0, 1), dilation=(1, 2, 1), groups=groups)
        self.up = nn.ConvTranspose3d(out_channels, 6, (3, 3, 2), stride=(2, 1, 3), padding=(1, 0, 1),
                                     output_padding=(1, 0, 2), dilation=(1, 2, 2), groups=groups)

    def forward(self, x):
        return self.up(self.mix(self.point(self.down(x))))


batch_size = 2
in_channels, mid_channels, wide, out_channels, groups = 4, 32, 64, 80, 2
depth, height, width = 5, 9, 12


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, mid_channels, wide, out_channels, groups]
'''

# Functional 1-d chain: depthwise (groups read at run time) and a strided transposed conv take the
# direct kernels; the pointwise conv and the stride-1 grouped transposed conv have channels enough
# for the implicit GEMM (the latter through the flipped filter).
CONV1D_CHAIN = HEADER + '''class Model(nn.Module):
    def __init__(self, channels, wide, out_channels, groups, kernel_size):
        super().__init__()
        self.channels, self.groups = channels, groups  # weights scaled as nn.Conv's init keeps outputs near 1
        self.depthwise = nn.Parameter(torch.randn(channels, 1, kernel_size) * 0.5)
        self.pointwise = nn.Parameter(torch.randn(wide, channels, 1) * 0.2)
        self.pointwise_bias = nn.Parameter(torch.randn(wide))
        self.mix = nn.Parameter(torch.randn(wide, out_channels // groups, kernel_size) * 0.1)
        self.up = nn.Parameter(torch.randn(out_channels, 8, kernel_size) * 0.1)

    def forward(self, x):
        x = F.conv1d(x, self.depthwise, None, 1, 2, 2, self.channels)
        x = F.conv1d(x, self.pointwise, self.pointwise_bias)
        x = F.conv_transpose1d(x, self.mix, None, 1, 1, 0, self.groups, 2)
        return F.conv_transpose1d(x, self.up, stride=3, padding=1, output_padding=2)


batch_size, channels, wide, out_channels, groups, kernel_size, length = 2, 32, 64, 80, 2, 3, 40


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, wide, out_channels, groups, kernel_size]
'''

# A multi-op task: the transposed 3-d conv stays in ATen, the elementwise tail is one HIP kernel.
CONV_TRANSPOSE3D_HEAD = HEADER + '''class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)

    def forward(self, x, add_input):
        return F.hardswish(self.conv_transpose(x) + add_input) * 0.5


batch_size, in_channels, out_channels, depth, height, width = 2, 4, 8, 6, 7, 8
kernel_size, stride, padding, output_padding = 3, 2, 1, 1


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width),
            torch.randn(batch_size, out_channels, 2 * depth, 2 * height, 2 * width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding]
'''

SAME_PADDING = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding="same")

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 4, 16, 16)]


def get_init_inputs():
    return []
'''

TASKS = {"conv3d_chain": (CONV3D_CHAIN, "conv", 4), "conv1d_chain": (CONV1D_CHAIN, "conv", 4),
         "conv_transpose3d_head": (CONV_TRANSPOSE3D_HEAD, "fused-around-aten", 1)}


@pytest.fixture(scope="module")
def generated() -> dict:
    return {name: generate(source) for name, (source, _, _) in TASKS.items()}


def test_strategies_and_kernels(generated):
    for name, (_, strategy, kernels) in TASKS.items():
        assert (generated[name].strategy, len(generated[name].kernels)) == (strategy, kernels), name
    chain = generated["conv3d_chain"].source
    assert "F.conv" not in chain and "gridDim.y" not in chain and "int64_t i =" in chain  # 1-D grid, 64-bit index
    assert "def __init__(self, in_channels, mid_channels, wide, out_channels, groups):" in chain  # the reference's
    assert "conv_3_gemm" not in chain  # a strided transposed conv has no implicit-GEMM form
    functional = generated["conv1d_chain"].source
    assert all(f"conv_{i}_gemm<{flip}>" in functional for i, flip in ((0, "false"), (1, "false"), (2, "true")))
    head = generated["conv_transpose3d_head"].source
    # the conv's bias moves into the fused epilogue (PyTorch would add it in a pass of its own)
    assert "F.conv_transpose3d(x, self.conv_transpose.weight, None, stride=(2, 2, 2)" in head
    assert "hip_ext.fused_0(t0, self.conv_transpose.bias, add_input)" in head


def test_unsupported_padding_is_declined_with_its_reason():
    with pytest.raises(Untranslatable, match="padding='same'"):
        generate(SAME_PADDING)


def test_conv_kernels_are_correct_on_cpu_at_other_sizes(generated):
    """Translated at one size, checked at another: sizes are read at run time."""
    source = CONV3D_CHAIN.replace("depth, height, width = 5, 9, 12", "depth, height, width = 4, 10, 13")
    config = EvalConfig(backend="cpu", timed_trials=2, gate=False, time_compiled_ref=False)
    [(_, result)] = list(evaluate_many([(generated["conv3d_chain"].source, source)], config, parallel=1))
    assert result.verdict.value == "correct", (result.verdict.value, result.message[:600])


def test_a_conv_bias_moved_into_the_epilogue_is_still_added(generated):
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    [(_, result)] = list(evaluate_many([(generated["conv_transpose3d_head"].source, CONV_TRANSPOSE3D_HEAD)], config,
                                       parallel=1))
    assert result.verdict.value == "correct", (result.verdict.value, result.message[:600])


def test_a_conv_whose_user_is_not_fused_work_keeps_its_bias():
    pooled = CONV_TRANSPOSE3D_HEAD.replace("F.hardswish(self.conv_transpose(x) + add_input) * 0.5",
                                           "self.pool(self.conv_transpose(x)) * 0.5")
    pooled = pooled.replace("output_padding=output_padding)\n", "output_padding=output_padding)\n"
                            "        self.pool = nn.MaxPool3d(2)\n", 1)
    source = generate(pooled).source
    assert "self.conv_transpose.weight, self.conv_transpose.bias" in source
