"""The translator's matrix-vector path and long-K GEMM accuracy, on the cpu backend.

KernelBench L1/4 (A (2048, 2^20) @ B (2^20, 1)) failed at atol = rtol = 1e-4 on an H200: each thread of
the tiled GEMM summed all K products into one float. The GEMM now sums a tile at a time, and N == 1 (or
M == 1 against a transposed B) takes a block-per-row GEMV with a tree reduction, chosen at run time.
Each evaluation builds one extension (~10 s on two cores, cached by source).
"""

from __future__ import annotations

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import GenParams, generate

HEADER = "import torch\nimport torch.nn as nn\n\n\n"


def task(forward: str, inputs: str, init: str = "pass", init_inputs: str = "[]", args: str = "a, b") -> str:
    """A KernelBench-format task source."""
    return (HEADER + "class Model(nn.Module):\n    def __init__(self, *p):\n        super().__init__()\n"
            f"        {init}\n\n    def forward(self, {args}):\n        return {forward}\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init_inputs}\n")


# KernelBench L1/4 "Matrix_vector_multiplication", scaled down from M = 2048, K = 2^20
MATVEC = task("torch.matmul(a, b)", "[torch.rand(64, 4096), torch.rand(4096, 1)]")
# x (1, K) through nn.Linear: M == 1 against the (N, K) weight, a GEMV over the weight's rows
ROW_LINEAR = task("self.fc(a)", "[torch.rand(1, 2048)]", init="self.fc = nn.Linear(p[0], p[1])",
                  init_inputs="[2048, 96]", args="a")
# Long K with torch.rand: every product positive, sums ~K/4, where one running float per output loses
# digits. The reference sums in float64: torch's CPU matmul at these small M, N is itself one sequential
# fp32 sum per output (bit-identical to the old kernel), while cuBLAS on the GPU is not.
LONG_K_INPUTS = "[torch.rand(8, 1 << 20), torch.rand(1 << 20, 8)]"
LONG_K = task("torch.matmul(a, b)", LONG_K_INPUTS)
LONG_K_F64 = task("torch.matmul(a.double(), b.double()).float()", LONG_K_INPUTS)
LONG_MATVEC_INPUTS = "[torch.rand(16, 1 << 20), torch.rand(1 << 20, 1)]"


def _check(task_source: str, wavefront: int = 64, reference: str | None = None,
           params: GenParams | None = None) -> str:
    """The candidate translated from task_source is correct against reference (default: the task itself), on
    the correctness seeds (accuracy at these sizes is the point: no adversarial inputs or second size)."""
    config = EvalConfig(backend="cpu", wavefront=wavefront, timed_trials=1, warmup=0, gate=False,
                        time_compiled_ref=False, adversarial=False, second_size=False)
    generated = generate(task_source, params)
    result = evaluate(generated.source, reference or task_source, config)
    assert result.verdict.value == "correct", (result.message, result.compile_log[-2000:])
    return generated.source


def test_matvec_source_has_the_gemv_path():
    gen = generate(MATVEC)
    assert gen.strategy == "gemm"
    assert "gemv_kernel<" in gen.source and "N == 1" in gen.source
    assert "gemm_kernel<" in gen.source  # one candidate serves every size: the tiled GEMM stays as fallback
    hip = gen.source.split('r"""', 1)[1].split('"""', 1)[0]
    assert "warpSize" in hip and "hf_block_reduce<0>" in hip


def test_batched_and_masked_products_have_no_gemv_path():
    bmm = generate(task("torch.bmm(a, b)", "[torch.rand(2, 8, 16), torch.rand(2, 16, 1)]"))
    assert "gemv_kernel<" not in bmm.source
    tri = generate(task("torch.triu(torch.matmul(a, b))", "[torch.rand(8, 16), torch.rand(16, 8)]"))
    assert "gemv_kernel<" not in tri.source


@pytest.mark.parametrize("wavefront", [64, 32])
def test_matvec_is_correct_on_cpu(wavefront: int):
    _check(MATVEC, wavefront)


def test_row_vector_through_linear_is_correct_on_cpu():
    _check(ROW_LINEAR, 32)


def test_linear_to_one_feature_is_correct_with_scalar_loads_only():
    """N == 1 through nn.Linear on a 3-D input: every row adds the one bias value; vector_width=1."""
    linear = task("self.fc(a)", "[torch.rand(2, 5, 256)]", init="self.fc = nn.Linear(p[0], 1)",
                  init_inputs="[256]", args="a")
    source = _check(linear, 32, params=GenParams(vector_width=1, block_size=128))
    assert "const int vec4 = false;" in source and "gemv_kernel<128>" in source


def test_matvec_with_unaligned_k_takes_the_scalar_loads():
    _check(task("torch.matmul(a, b)", "[torch.rand(33, 1027), torch.rand(1027, 1)]"))


def test_long_k_gemm_stays_within_fp32_tolerance():
    """Fails with one sequential accumulator per output: max error ~2x the 1e-4 tolerance here."""
    _check(LONG_K, reference=LONG_K_F64)


def test_long_k_matvec_stays_within_fp32_tolerance():
    _check(task("torch.matmul(a, b)", LONG_MATVEC_INPUTS), 32,
           reference=task("torch.matmul(a.double(), b.double()).float()", LONG_MATVEC_INPUTS))
