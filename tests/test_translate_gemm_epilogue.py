"""GenParams.gemm_epilogue: "fused" has our GEMM apply the elementwise work after a matmul / linear / bmm before
its store (kernels/gemm_epilogue.py), one launch; "aten" (the default) keeps today's split, byte for byte.

Small level-2-like models, each through the simt tile kernels (block and warp tiles) and split-K: operands read
at the output's flat index, at its column, as scalars and through a broadcast span, the linear's own bias, a
batch. Operands hold distinct values, so one read at the wrong element is wrong. One cpu-backend build per case.
"""

from __future__ import annotations

import pytest

from hipforge.agents.evolver.offline import CHOICES, FAVOURED
from hipforge.execution import gate
from hipforge.translate import GenParams, generate
from tests.test_translate_conv_epilogue import _correct, task

FUSED = GenParams(gemm_epilogue="fused")

CASES = {
    # the linear's bias, a scalar multiply, leaky ReLU (KernelBench L2/12's shape of work)
    "linear_scale_leaky": task("self.fc = nn.Linear(37, 70)", "return F.leaky_relu(self.fc(x) * 1.7, 0.1)",
                               "[torch.randn(9, 37)]"),
    # a (N,) parameter read at the column, a (B, 1) one through its span, the product read twice (swish)
    "matmul_column_row": task(
        "self.w = nn.Parameter(torch.randn(70, 45))\n        self.b = nn.Parameter(torch.randn(70))\n"
        "        self.r = nn.Parameter(torch.randn(13, 1))",
        "y = torch.matmul(x, self.w.T) + self.b\n        return torch.sigmoid(y) * y - self.r",
        "[torch.randn(13, 45)]"),
    # a batch, and a residual of the product's own shape read at the flat index
    "bmm_residual_clamp": task("pass", "return torch.clamp(torch.bmm(x, y) * 0.5 + z, min=-1.0, max=2.0)",
                               "[torch.randn(3, 21, 17), torch.randn(3, 17, 34), torch.randn(3, 21, 34)]",
                               args="x, y, z"),
}
SPLIT = task("self.fc = nn.Linear(9000, 12)", "return torch.tanh(self.fc(x)) + 0.25", "[torch.rand(5, 9000)]")
REDUCED = task("self.fc = nn.Linear(20, 30)", "return torch.relu(self.fc(x)).sum(dim=1, keepdim=True)",
               "[torch.randn(4, 20)]")


@pytest.fixture(scope="module")
def fused() -> dict:
    return {name: generate(source, FUSED) for name, source in CASES.items()}


def test_fused_is_one_kernel_without_an_aten_gemm(fused):
    for name, gen in fused.items():
        body = [line.strip() for line in gen.source.split("def forward")[1].splitlines()[1:]]
        calls = [line for line in body if "hip_ext." in line]
        assert gen.kernels == ("gemm_epilogue_0",) and gen.strategy == "gemm_epilogue", name
        assert len(calls) == 1 and body[body.index(calls[0]) + 1] == f"return {calls[0].split(' = ')[0]}", name
        assert "torch.matmul" not in gen.source.split("def forward")[1] and "F.linear" not in gen.source, name
        assert gen.choices["gemm_epilogue"] == "fused", name
        assert "gemv_" not in gen.source  # the matrix-vector kernels have no epilogue: never taken with one
    # operands by where they vary: the column, a span (the row's own (13, 1) parameter), the flat index
    assert "return gemm_epilogue_0_op(v, in1[col], in2[hf_bcast(at, inner_0_1, count_0_1)]);" in \
        fused["matmul_column_row"].source
    assert "gemm_epilogue_0_op(v, in1[at])" in fused["bmm_residual_clamp"].source


def test_aten_is_todays_split():
    for source in [*CASES.values(), SPLIT]:
        today = generate(source)
        assert generate(source, GenParams(gemm_epilogue="aten")).source == today.source
        assert today.strategy == "fused-around-aten" and "gemm_epilogue" not in today.choices


def test_a_reduction_after_the_gemm_falls_back_with_its_reason():
    gen = generate(REDUCED, FUSED)
    assert gen.source == generate(REDUCED).source and "F.linear" in gen.source
    assert gen.choices == {"gemm_epilogue": "aten (a reduction follows it in its fused kernel)"}


def test_the_choice_is_validated_and_evolved():
    with pytest.raises(ValueError, match="gemm_epilogue must be one of aten, fused, not 'yes'"):
        GenParams(gemm_epilogue="yes")
    assert CHOICES["gemm_epilogue"] == ("aten", "fused") and "gemm_epilogue" in FAVOURED["memory-bound"]


@pytest.mark.parametrize("tile", ["auto", "64x64x16/4x4w32x16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_is_correct_on_cpu(name: str, tile: str):
    _correct(generate(CASES[name], FUSED.with_changes(gemm_tile=tile)).source, CASES[name])


def test_split_k_applies_the_epilogue_once_after_the_slices():
    gen = generate(SPLIT, FUSED)
    assert "gemm_split_sum<0, gemm_epilogue_0_epi>" in gen.source
    _correct(gen.source, SPLIT)


@pytest.mark.skipif(not gate.available(), reason="clang-22 / HIP headers not installed")
def test_fused_kernels_compile_for_gfx950(fused):
    for name, gen in [*fused.items(), ("split", generate(SPLIT, FUSED))]:
        result = gate.gate_candidate(gen.source)
        assert result.ok, (name, result.log[-2000:])
