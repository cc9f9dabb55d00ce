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
from tests.test_translator import assert_no_hard_coded_warp_width

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


# each case with a tile of gemm_kernel (block-wide thread mapping) and one of gemm_wtile_kernel (warp tiles)
CASES = {
    # K and N odd: scalar loads of both operands, partial tiles on every side
    "plain_odd": (task("torch.matmul(a, b)", "[torch.randn(67, 45), torch.randn(45, 93)]"),
                  "auto", "128x128x8/8x8w32x64"),
    # K, N multiples of 4, M not: float4 loads with edge rows
    "plain_vec": (task("torch.matmul(a, b)", "[torch.randn(131, 48), torch.randn(48, 100)]"),
                  "128x128x8/8x8", "128x128x16/8x8w64x32"),
    "trans_a": (task("torch.matmul(a.T, b)", "[torch.randn(37, 68), torch.randn(37, 52)]"),
                "64x128x8/4x8", "64x64x16/4x4w32x16"),
    "trans_b": (task("torch.matmul(a, b.T)", "[torch.randn(70, 36), torch.randn(90, 36)]"),
                "128x64x8/8x4", "128x64x16/8x4w32x32"),
    "trans_both": (task("torch.matmul(a.T, b.T)", "[torch.randn(41, 33), torch.randn(29, 41)]"),
                   "128x128x16/8x8", "128x128x8/8x8w64x32"),
    "bmm": (task("torch.bmm(a, b)", "[torch.randn(3, 37, 20), torch.randn(3, 20, 44)]"),
            "64x64x16/4x4", "128x128x16/8x8w32x64"),
    # tiles the mask zeroes entirely skip their products (the lower-left ones of triu, upper-right of tril)
    "triu": (task("torch.triu(torch.matmul(a, b), diagonal=3)", "[torch.randn(150, 24), torch.randn(24, 140)]"),
             "32x32x8/4x4", "64x64x16/4x4w32x16"),
    "tril": (task("torch.tril(torch.matmul(a, b), diagonal=-2)", "[torch.randn(140, 28), torch.randn(28, 150)]"),
             "32x32x8/4x4", "128x128x8/8x8w32x64"),
    "linear_bias": (linear("2, 9", 36, 70), "auto", "256x128x8/8x8w64x32"),
    # K = 20000 > SLICE_K: slices summed by gemm_split_sum, with the bias added there
    "split_k_bias": (linear("5", 20000, 12), "auto", "128x128x16/8x8w64x32"),
}
WARP_TILES = tuple(t for t in TILES if parse(t).warp)


@pytest.mark.parametrize("kernel", ["block", "warp"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gemm_is_correct_on_cpu(name: str, kernel: str):
    source, block_tile, warp_tile = CASES[name]
    gen = _check(source, GenParams(gemm_tile=block_tile if kernel == "block" else warp_tile))
    assert ("gemm_wtile_kernel<" in gen) == (kernel == "warp")


def test_the_cases_run_every_warp_tile():
    assert sorted({warp for _, _, warp in CASES.values()}) == sorted(WARP_TILES)


@pytest.mark.parametrize("tile", WARP_TILES)
def test_warp_tiles_cover_their_block_tile(tile: str):
    """C one block tile and an odd edge large, K two K-tiles and an odd edge: every lane of every warp tile,
    every 4 x 4 sub-tile of each lane, and the edges' guarded loads and stores; wave64 on the cpu backend,
    whose warps then hold two lane groups (the CASES run at wave32)."""
    t = parse(tile)
    m, n, k = t.bm + 5, t.bn + 3, 2 * t.bk + 7
    source = task("torch.matmul(a, b)", f"[torch.randn({m}, {k}), torch.randn({k}, {n})]")
    _check(source, GenParams(gemm_tile=tile), wavefront=64)


@pytest.mark.parametrize("tile", ["64x64x8/4x4", "64x64x16/4x4w32x16"])
def test_forced_split_k_with_a_mask(tile: str):
    """split_k = 3 on a short K: three slices, the triu mask and the zero tiles applied by the slices' sum."""
    source = task("torch.triu(torch.matmul(a, b))", "[torch.randn(70, 50), torch.randn(50, 66)]")
    gen = _check(source, GenParams(gemm_tile=tile, split_k=3))
    assert "gemm_split_sum<1, HfGemmPlain>" in gen


def _check(task_source: str, params: GenParams, wavefront: int = 32) -> str:
    config = EvalConfig(backend="cpu", wavefront=wavefront, timed_trials=1, warmup=0, gate=False,
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
    assert "gemm_kernel<128, 128, 8, 8, 8, false, false, 0, HfGemmPlain>" in gen.source
    assert all(str(parse(t)) == t for t in TILES)
    for bad in ("128x128x8/2x2", "16x16x8/4x4", "256x256x8/4x4", "128x128"):
        with pytest.raises(ValueError):
            GenParams(gemm_tile=bad)


def test_warp_tiles_are_parsed_and_launched():
    tile = parse("128x128x16/8x8w32x64")
    assert (tile.wm, tile.wn, tile.threads, tile.warp, parse("128x128x16/8x8").warp) == (32, 64, 256, True, False)
    gen = generate(task("torch.matmul(a, b.T)", "[torch.rand(512, 512), torch.rand(512, 512)]"),
                   GenParams(gemm_tile="128x128x8/8x8w64x32"))
    assert gen.choices == {"gemm_tile": "128x128x8/8x8w64x32", "split_k": 0}
    assert "gemm_wtile_kernel<128, 128, 8, 8, 8, 64, 32, false, true, 0, HfGemmPlain>" in gen.source
    assert "gemm_kernel<" not in gen.source  # a candidate carries the one tile kernel it launches
    # its lane groups of 32 are a mapping, not the hardware's warp: nothing reads as a warp width
    assert_no_hard_coded_warp_width("128x128x8/8x8w64x32", gen.source)
    bad = {"128x128x8/8x8w64x64": "multiply to 32", "128x128x8/8x8w16x64": "multiply to 32",  # 64, 16 lanes
           "128x128x8/8x8w48x32": "does not divide", "128x128x8/8x8w256x16": "does not divide",
           "128x128x8/8x8w0x32": "does not divide", "64x64x8/8x8w4x64": "must be whole",  # WM < TM
           "128x128x8/8x8w32": "is not", "128x128x8/8x8w32x64w32x64": "is not"}
    for text, why in bad.items():
        with pytest.raises(ValueError, match=why):
            GenParams(gemm_tile=text)


@needs_gate
@pytest.mark.parametrize("tile", TILES)
def test_every_tile_compiles_for_gfx950(tile: str):
    """Every tile evolution may pick, each transpose and mask, through the clang-22 gate (wave64)."""
    forms = ["torch.matmul(a, b)", "torch.matmul(a.T, b.T)", "torch.tril(torch.matmul(a, b.T))"]
    for forward in forms:
        gen = generate(task(forward, "[torch.rand(64, 64), torch.rand(64, 64)]"), GenParams(gemm_tile=tile))
        result = gate.gate_candidate(gen.source)
        assert result.ok, (tile, forward, result.log[-2000:])
