"""The translator's register-blocked GEMM (kernels/gemm*.py) on the cpu backend and the gfx950 gate.

Shapes are small but never multiples of a tile (or of 4, where the scalar-load path is the point):
every transpose, batch, triangular masks with a diagonal offset, nn.Linear's bias, split-K (long K, and
forced), and the larger tiles the translator picks at KernelBench's sizes. Each case is one build on
the cpu backend (~10-30 s on two cores, cached by source).
"""

from __future__ import annotations

import pytest

from hipforge.execution import gate
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import GenParams, generate
from hipforge.translate.kernels.gemm_tiles import TILES, choose, parse

HEADER = "import torch\nimport torch.nn as nn\n\n\n"
needs_gate = pytest.mark.skipif(not gate.available(), reason="clang-22 / HIP headers not installed")


def task(forward: str, inputs: str, init: str = "pass", init_inputs: str = "[]", args: str = "a, b") -> str:
    """A KernelBench-format task source."""
    return (HEADER + "class Model(nn.Module):\n    def __init__(self, *p):\n        super().__init__()\n"
            f"        {init}\n\n    def forward(self, {args}):\n        return {forward}\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init_inputs}\n")


def linear(batch: str, k: int, n: int) -> str:
    return task("self.fc(a)", f"[torch.rand({batch}, {k})]", init="self.fc = nn.Linear(p[0], p[1])",
                init_inputs=f"[{k}, {n}]", args="a")


CASES = {
    # K and N odd: scalar loads of both operands, partial tiles on every side
    "plain_odd": (task("torch.matmul(a, b)", "[torch.randn(67, 45), torch.randn(45, 93)]"), "auto"),
    # K, N multiples of 4, M not: float4 loads with edge rows
    "plain_vec": (task("torch.matmul(a, b)", "[torch.randn(131, 48), torch.randn(48, 100)]"), "128x128x8/8x8"),
    "trans_a": (task("torch.matmul(a.T, b)", "[torch.randn(37, 68), torch.randn(37, 52)]"), "64x128x8/4x8"),
    "trans_b": (task("torch.matmul(a, b.T)", "[torch.randn(70, 36), torch.randn(90, 36)]"), "128x64x8/8x4"),
    "trans_both": (task("torch.matmul(a.T, b.T)", "[torch.randn(41, 33), torch.randn(29, 41)]"), "128x128x16/8x8"),
    "bmm": (task("torch.bmm(a, b)", "[torch.randn(3, 37, 20), torch.randn(3, 20, 44)]"), "64x64x16/4x4"),
    "triu": (task("torch.triu(torch.matmul(a, b), diagonal=3)", "[torch.randn(150, 24), torch.randn(24, 140)]"),
             "32x32x8/4x4"),
    "tril": (task("torch.tril(torch.matmul(a, b), diagonal=-2)", "[torch.randn(140, 28), torch.randn(28, 150)]"),
             "32x32x8/4x4"),
    "linear_bias": (linear("2, 9", 36, 70), "auto"),
    # K = 20000 > SLICE_K: slices summed by gemm_split_sum, with the bias added there
    "split_k_bias": (linear("5", 20000, 12), "auto"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gemm_is_correct_on_cpu(name: str):
    source, tile = CASES[name]
    _check(source, GenParams(gemm_tile=tile))


def test_forced_split_k_with_a_mask_and_a_thread_tile_of_eight():
    """split_k = 3 on a short K: three slices, the triu mask and the zero tiles applied by the slices' sum."""
    source = task("torch.triu(torch.matmul(a, b))", "[torch.randn(70, 50), torch.randn(50, 66)]")
    gen = _check(source, GenParams(gemm_tile="64x64x8/4x4", split_k=3))
    assert "gemm_split_sum<1>" in gen


def _check(task_source: str, params: GenParams) -> str:
    config = EvalConfig(backend="cpu", wavefront=32, timed_trials=1, warmup=0, gate=False,
                        time_compiled_ref=False, adversarial=False, second_size=False)
    generated = generate(task_source, params)
    result = evaluate(generated.source, task_source, config)
    assert result.verdict.value == "correct", (result.message, result.compile_log[-2000:])
    return generated.source


def test_tiles_are_chosen_from_the_shapes_and_recorded():
    assert str(choose(4096, 4096, 4096, 1)) == "128x128x8/8x8"  # KernelBench L1/1
    assert str(choose(256, 256, 1 << 19, 1)) == "128x128x8/8x8"  # L1/6: split-K fills the GPU instead
    assert str(choose(64, 64, 64, 1)) == "32x32x8/4x4"
    gen = generate(task("torch.matmul(a, b)", "[torch.rand(4096, 4096), torch.rand(4096, 4096)]"))
    assert gen.choices == {"gemm_tile": "128x128x8/8x8", "split_k": 0}
    assert "gemm_kernel<128, 128, 8, 8, 8, false, false, 0>" in gen.source
    assert all(str(parse(t)) == t for t in TILES)
    for bad in ("128x128x8/2x2", "16x16x8/4x4", "256x256x8/4x4", "128x128"):
        with pytest.raises(ValueError):
            GenParams(gemm_tile=bad)


@needs_gate
@pytest.mark.parametrize("tile", TILES)
def test_every_tile_compiles_for_gfx950(tile: str):
    """Every tile evolution may pick, each transpose and mask, through the clang-22 gate (wave64)."""
    forms = ["torch.matmul(a, b)", "torch.matmul(a.T, b.T)", "torch.tril(torch.matmul(a, b.T))"]
    for forward in forms:
        gen = generate(task(forward, "[torch.rand(64, 64), torch.rand(64, 64)]"), GenParams(gemm_tile=tile))
        result = gate.gate_candidate(gen.source)
        assert result.ok, (tile, forward, result.log[-2000:])
