"""GenParams.gemm_engine "mma": the matrix-core GEMM (kernels/gemm_mma.py: fp32 MFMA under a HIP compiler, 3xTF32
wmma under nvcc) and the tensor-core implicit-GEMM conv (conv_gemm.py, nvcc only), the simt kernels everywhere
else. Without a GPU: the choice and its record, the nvcc build of the cuda backend (tensor-core path included),
the gfx950 gate (the MFMA path) and the cpu backend (the simt path; both matrix-core paths through emulations).
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
from tests.test_translate_conv_epilogue import task as epilogue_task
from tests.test_translate_gemm import _check, needs_gate, task
from tests.test_translate_gemm_epilogue import CASES as GEMM_EPILOGUE_CASES

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
    cores, rest = gen.source.split("#if defined(HF_MMA_ENGINE)  // matrix cores", 1)[1].split("#else", 1)
    assert "gemm_mma_kernel<128, 128, 16, false, false, 1, HfGemmPlain><<<" in cores and "block(256)" in cores
    assert "gemm_kernel<32, 32, 8, 4, 4, false, false, 1, HfGemmPlain><<<" in rest.split("#endif", 1)[0]
    assert "#define HF_MMA_ENGINE 1" in gen.source and "#define HF_MMA_ENGINE 2" in gen.source
    fused = generate(LINEAR_EPILOGUE, CONV_MMA).source  # the epilogue's functor goes to both engines' kernels
    assert "gemm_mma_kernel<128, 128, 16, false, true, 0, gemm_epilogue_0_epi><<<" in fused
    assert "gemm_mma_kernel" not in generate(TRIU_ODD).source  # the default engine carries none of it
    conv = generate(CONV, CONV_MMA).source
    cores, rest = conv.split("#if defined(HF_MMA_ENGINE)  // matrix cores", 1)[1].split("#else", 1)
    assert "conv_epilogue_0_gemm_mma<false><<<" in cores and "conv_epilogue_0_gemm<false><<<" in rest
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
# split-K with an epilogue at a K short enough to emulate quickly: the cpu runtime's 256 compute units still
# split its one tile's K into 4 slices (gemm._launch's idle-units rule)
SPLIT = epilogue_task("self.fc = nn.Linear(1100, 12)", "return torch.tanh(self.fc(x)) + 0.25", "[torch.rand(5, 1100)]")
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
    assert "#define HF_MMA_ENGINE 1" in emulated.split("#elif", 1)[0]
    _assert_correct_on_cpu(emulated, source, wavefront=32)


MFMA_CASES = {**TENSOR_CORE_CASES, "linear_bias": TRANS_B_BIAS}


@pytest.mark.parametrize("name", sorted(MFMA_CASES))
def test_the_mfma_path_is_correct_on_cpu_through_emulated_mfma(name: str):
    """The GEMM's and the implicit-GEMM conv's AMD branch on the cpu backend: a HIP compiler's engine switched on,
    each MFMA step taken by hf_mfma_16x16x4's own fallback, shuffles in the instruction's lane layout over a
    wavefront of 64. Checks the kernels' lane-to-fragment indexing, staging and epilogues against that layout;
    the layout itself is the instruction's as AMD documents it, which only an MI300/MI350 run confirms."""
    source = MFMA_CASES[name]
    emulated = generate(source, CONV_MMA).source.replace("#elif defined(__HIP__)", "#elif 1")
    assert emulated.count("#elif 1") == 1 and "__builtin_amdgcn_mfma_f32_16x16x4f32" in emulated
    _assert_correct_on_cpu(emulated, source, wavefront=64)


def _assert_correct_on_cpu(candidate: str, source: str, wavefront: int) -> None:
    config = EvalConfig(backend="cpu", wavefront=wavefront, timed_trials=1, warmup=0, gate=False,
                        time_compiled_ref=False, adversarial=False, second_size=False)
    result = evaluate(candidate, source, config)
    assert result.verdict.value == "correct", (result.message[:2000], result.compile_log[-2000:])
