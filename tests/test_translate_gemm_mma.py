"""GenParams.gemm_engine "mma": the tensor-core GEMM (kernels/gemm_mma.py) and implicit-GEMM conv (conv_gemm.py)
where nvcc compiles, the simt kernels everywhere else. Without a GPU: the choice and its record, the nvcc build
of the cuda backend (tensor-core path included), the gfx950 gate and the cpu backend (both take the simt path).
Its numbers come from scripts/gpu_gemm_bench.py --engines simt,mma and kernelbench_run.py --param gemm_engine=mma.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from hipforge.agents.evolver.offline import CHOICES, FAVOURED
from hipforge.execution import gate
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import GenParams, generate
from hipforge.translate.params import GEMM_ENGINES
from tests.test_translate_conv_epilogue import CASES as CONV_CASES
from tests.test_translate_gemm import _check, needs_gate, task
from tests.test_translate_gemm_epilogue import CASES as GEMM_EPILOGUE_CASES
from tests.test_translate_gemm_epilogue import SPLIT

MMA = GenParams(gemm_engine="mma")
TRANS_B_BIAS = task("self.fc(a)", "[torch.rand(3, 5, 36)]", init="self.fc = nn.Linear(p[0], p[1])",
                    init_inputs="[36, 70]", args="a")
TRIU_ODD = task("torch.triu(torch.matmul(a, b), diagonal=3)", "[torch.randn(150, 27), torch.randn(27, 141)]")
CONV = CONV_CASES["conv2d_bias_relu_multiply"]  # 32 output channels: the implicit GEMM, with its epilogue fused
CONV_MMA = GenParams(gemm_engine="mma", conv_epilogue="fused", gemm_epilogue="fused")
LINEAR_EPILOGUE = task("torch.relu(self.fc(a) * 0.5)", "[torch.rand(6, 40)]", init="self.fc = nn.Linear(p[0], p[1])",
                       init_inputs="[40, 72]", args="a")


def test_the_engine_is_a_choice_evolution_mutates():
    assert CHOICES["gemm_engine"] == GEMM_ENGINES == ("simt", "mma") and "gemm_engine" in FAVOURED["compute-bound"]
    with pytest.raises(ValueError, match="gemm_engine must be one of simt, mma, not 'tf32'"):
        GenParams(gemm_engine="tf32")


def test_mma_launches_under_nvcc_and_the_simt_tile_elsewhere():
    gen = generate(TRIU_ODD, MMA)
    assert gen.choices == {"gemm_tile": "32x32x8/4x4", "split_k": 0, "gemm_engine": "mma"}
    nvcc, rest = gen.source.split("#if defined(__NVCC__)  // tensor cores", 1)[1].split("#else", 1)
    assert "gemm_mma_kernel<128, 128, 16, 64, 32, false, false, 1, HfGemmPlain><<<" in nvcc and "block(256)" in nvcc
    assert "gemm_kernel<32, 32, 8, 4, 4, false, false, 1, HfGemmPlain><<<" in rest.split("#endif", 1)[0]
    fused = generate(LINEAR_EPILOGUE, CONV_MMA).source  # the epilogue's functor goes to both engines' kernels
    assert "gemm_mma_kernel<128, 128, 16, 64, 32, false, true, 0, gemm_epilogue_0_epi><<<" in fused
    assert "gemm_mma_kernel" not in generate(TRIU_ODD).source  # the default engine carries none of it
    conv = generate(CONV, CONV_MMA).source
    nvcc, rest = conv.split("#if defined(__NVCC__)  // tensor cores", 1)[1].split("#else", 1)
    assert "conv_epilogue_0_gemm_mma<false><<<" in nvcc and "conv_epilogue_0_gemm<false><<<" in rest
    assert conv.count("hf_tf32_split(const Frag&") == 1 and "hf_tf32_split" not in generate(CONV).source


@pytest.mark.parametrize("source", [TRANS_B_BIAS, TRIU_ODD, CONV, LINEAR_EPILOGUE],
                         ids=["linear_bias", "triu", "conv_epilogue", "gemm_epilogue"])
def test_mma_candidates_are_correct_on_cpu(source: str):
    """The cpu backend compiles with g++: the simt kernels run, bias, mask, odd edges and the conv's epilogue."""
    _check(source, CONV_MMA)


@needs_gate
def test_mma_candidates_compile_for_gfx950():
    for source in (TRANS_B_BIAS, TRIU_ODD, CONV, LINEAR_EPILOGUE):
        result = gate.gate_candidate(generate(source, CONV_MMA).source)
        assert result.ok, result.log[-2000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_mma_candidate_builds_with_the_cuda_backends_nvcc():
    """The tensor-core path through the shim: mma.h pulls in cuda_fp16.h, which must come before HIP's names."""
    from hipforge.execution.cuda import CudaBackend

    for name, source in (("mma_triu", TRIU_ODD), ("mma_conv", CONV), ("mma_linear_epilogue", LINEAR_EPILOGUE)):
        gen = generate(source, CONV_MMA)
        functions = re.findall(r"functions=\['(\w+)'\]", gen.source)
        module = CudaBackend(mode="lite").load_inline(name, gate.hip_sources(gen.source), functions=functions)
        assert callable(getattr(module, functions[0]))


WMMA = Path(__file__).parent / "kernels" / "wmma_emulation.h"
TENSOR_CORE_CASES = {"triu_odd": TRIU_ODD, "bmm_residual": GEMM_EPILOGUE_CASES["bmm_residual_clamp"],
                     "split_k_epilogue": SPLIT, "conv_epilogue": CONV}


@pytest.mark.parametrize("name", sorted(TENSOR_CORE_CASES))
def test_the_tensor_core_path_is_correct_on_cpu_through_emulated_wmma(name: str):
    """The nvcc-only kernels themselves on the cpu backend: `__NVCC__`'s branches switched on and nvcuda::wmma
    emulated (tests/kernels/wmma_emulation.h: whole fragments per lane). Checks their tiles, edges, masks,
    batch and split-K offsets and staged epilogues; an index off by one there fails these (tried: max abs errors
    31.9 and 7.6e28). The hardware's rounding is the GPU run's (scripts/gpu_mma_check.sh)."""
    source = TENSOR_CORE_CASES[name]
    generated = generate(source, CONV_MMA).source
    emulated = generated.replace("#if defined(__NVCC__)", "#if 1").replace("#include <mma.h>", WMMA.read_text())
    assert "#if 1  // tensor cores" in emulated and "_mma" in emulated.split("#if 1  // tensor cores")[1][:300]
    config = EvalConfig(backend="cpu", wavefront=32, timed_trials=1, warmup=0, gate=False, time_compiled_ref=False,
                        adversarial=False, second_size=False)
    result = evaluate(emulated, source, config)
    assert result.verdict.value == "correct", (result.message[:2000], result.compile_log[-2000:])
