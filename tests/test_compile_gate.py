"""The gfx950 compile gate (clang-22, HIP device code, no GPU): good kernels pass, device-code errors
fail with the compiler's message, torch host code does not stop kernels being gated, and a missing
clang never passes."""

from __future__ import annotations

import pytest

from hipforge.execution.gate import CompileGate, GateResult, available, gate, gate_candidate, hip_sources

GATE = CompileGate()
needs_clang = pytest.mark.skipif(GATE.unavailable_reason() is not None, reason=str(GATE.unavailable_reason()))

ELEMENTWISE = """
#include <hip/hip_runtime.h>
__global__ void elementwise_add_kernel(const float* a, const float* b, float* out, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) out[idx] = a[idx] + b[idx];
}
torch::Tensor elementwise_add_hip(torch::Tensor a, torch::Tensor b) {
    auto out = torch::zeros_like(a);
    const int n = a.numel();
    elementwise_add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                     out.data_ptr<float>(), n);
    return out;
}
"""

WAVE_REDUCE = """
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <torch/extension.h>
#include <ATen/hip/HIPContext.h>
template <typename scalar_t>
__global__ void row_sum(const scalar_t* x, float* out, int cols) {
    __shared__ float partial[16];
    float v = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v += static_cast<float>(x[blockIdx.x * cols + c]);
    for (int d = warpSize / 2; d > 0; d >>= 1) v += __shfl_down(v, d);
    if (threadIdx.x % warpSize == 0) partial[threadIdx.x / warpSize] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int w = 0; w < blockDim.x / warpSize; ++w) s += partial[w];
        out[blockIdx.x] = s;
    }
}
torch::Tensor row_sum_hip(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options().dtype(torch::kFloat32));
    hipStream_t stream = at::hip::getCurrentHIPStream();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "row_sum", ([&] {
        hipLaunchKernelGGL(HIP_KERNEL_NAME(row_sum<scalar_t>), dim3(x.size(0)), dim3(256), 0, stream,
                           x.data_ptr<scalar_t>(), out.data_ptr<float>(), (int)x.size(1));
    }));
    return out;
}
"""

CANDIDATE_PY = f'''
import os
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
os.environ["CXX"] = "hipcc"
elementwise_add_cpp_source = """{ELEMENTWISE}"""
elementwise_add = load_inline(name="elementwise_add", cpp_sources=elementwise_add_cpp_source,
                              functions=["elementwise_add_hip"], verbose=True)
class ModelNew(nn.Module):
    def forward(self, a, b):
        return elementwise_add.elementwise_add_hip(a, b)
'''


@needs_clang
@pytest.mark.parametrize("src", [ELEMENTWISE, WAVE_REDUCE], ids=["elementwise", "wave_reduce_half_dispatch"])
def test_good_kernels_pass(src: str) -> None:
    result = GATE.check(src)
    assert result.ok, result.log
    assert result.arch == ["gfx950"] and result.available and not result.device_only and result.seconds > 0


@needs_clang
@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (ELEMENTWISE.replace("a[idx] + b[idx]", "a[idx] + bias[idx]"), "use of undeclared identifier 'bias'"),
        (
            ELEMENTWISE.replace("int idx =", "int* idx_p = a; int idx ="),
            "cannot initialize a variable of type 'int *'",
        ),
        (WAVE_REDUCE.replace("__shfl_down(v, d)", "__shfl_down_sync(0xffffffff, v, d)"), "__shfl_down_sync"),
    ],
    ids=["undeclared_identifier", "wrong_types", "cuda_only_intrinsic"],
)
def test_device_code_errors_fail_with_the_compiler_message(broken: str, message: str) -> None:
    result = GATE.check(broken)
    assert not result.ok and result.available
    assert message in result.log and "candidate.hip:" in result.log


@needs_clang
def test_host_torch_code_outside_torch_lite_still_gates_the_kernels() -> None:
    host_heavy = WAVE_REDUCE.replace("return out;", "return torch::matmul(out, x).relu();")
    passed = GATE.check(host_heavy)
    assert passed.ok and passed.device_only, passed.log
    assert "no member named 'matmul' in namespace 'torch'" in passed.log
    failed = GATE.check(host_heavy.replace("partial[w];", "partial[w] + missing;"))
    assert not failed.ok and "use of undeclared identifier 'missing'" in failed.log


@needs_clang
def test_candidate_module_and_two_archs() -> None:
    assert hip_sources(CANDIDATE_PY) == [ELEMENTWISE]
    assert GATE.check_candidate(CANDIDATE_PY).ok and available()
    assert gate_candidate(CANDIDATE_PY, arch="gfx942").arch == ["gfx942"]
    both = gate(ELEMENTWISE, arch=("gfx950", "gfx942"))
    assert both.ok and both.arch == ["gfx950", "gfx942"]


def test_missing_clang_is_unavailable_never_a_pass() -> None:
    result = CompileGate(clang="clang++-does-not-exist").check(ELEMENTWISE)
    assert result == GateResult(False, ["gfx950"], result.log, 0.0, available=False)
    assert "gate unavailable" in result.log


def test_hip_sources_reads_names_lists_and_concatenation() -> None:
    py = 'a = "__global__ void k() {}"\nb = "int f();"\n'
    py += 'm = load_inline("n", [a, b + "\\n"], functions=["f"])\n'
    assert hip_sources(py) == ["__global__ void k() {}", "int f();\n"]


@needs_clang
def test_precompiled_head_is_built_once_and_never_decides_a_rejection(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HIPFORGE_COMPILE_CACHE", str(tmp_path))
    assert GATE.check(ELEMENTWISE).ok
    heads = list(tmp_path.glob("*/head.pch"))
    assert len(heads) == 1  # the compat lines + torch-lite prelude, parsed once
    broken = ELEMENTWISE.replace("int idx = ", "int idx = undeclared_name + ")
    result = GATE.check(broken)  # same head: the PCH is used, then the rejection is confirmed without it
    assert not result.ok and "use of undeclared identifier 'undeclared_name'" in result.log
    assert "candidate.hip:4:" in result.log  # the source's own lines, as without the PCH
    assert list(tmp_path.glob("*/head.pch")) == heads
