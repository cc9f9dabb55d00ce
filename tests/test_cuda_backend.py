"""The cuda backend (HIP on NVIDIA) and its rocm twin.

Without a GPU: the shim compiles HIP kernels with nvcc, the source scanner and torch-lite prelude,
a lite build that compiles, links, loads and runs host code on CPU tensors, the rocm backend's
settings. With a GPU (`torch.cuda.is_available()`): KernelBench-style candidates built and checked
against torch, the full-mode fallback, and the cold-evaluation wall time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import torch

from hipforge.execution.backend import CompileError
from hipforge.execution.cuda import CudaBackend, prelude, source
from hipforge.execution.cuda.backend import LITE_GAP, function_names, nvcc_flags
from hipforge.execution.rocm import RocmBackend, RocmSettings

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ADD4 = """
#include <hip/hip_runtime.h>
__global__ void add4(const float4* a, const float4* b, float4* out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
torch::Tensor add4_hip(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.numel() % 4 == 0, "numel must be a multiple of 4, got ", a.numel());
    auto out = torch::empty_like(a);
    int n4 = a.numel() / 4;
    hipLaunchKernelGGL(add4, dim3((n4 + 255) / 256), dim3(256), 0, 0,
                       (const float4*)a.data_ptr<float>(), (const float4*)b.data_ptr<float>(),
                       (float4*)out.data_ptr<float>(), n4);
    return out;
}
"""

REDUCE = """
#include <hip/hip_runtime.h>
__device__ float warp_sum(float v) {
    for (int d = warpSize / 2; d > 0; d >>= 1) v += __shfl_down(v, d);
    return v;
}
__global__ void row_sum(const float* x, float* out, int cols) {
    __shared__ float partial[32];
    float v = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v += x[blockIdx.x * cols + c];
    v = warp_sum(v);
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / warpSize ? partial[lane] : 0.f;
        v = warp_sum(v);
        if (lane == 0) out[blockIdx.x] = v;
    }
}
__global__ void warp_size_probe(int* out) { out[0] = warpSize; out[1] = (int)__ballot(1) ; }
torch::Tensor row_sum_hip(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    row_sum<<<x.size(0), 256, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
torch::Tensor warp_size_hip(torch::Tensor like) {
    auto out = torch::zeros({2}, like.options().dtype(torch::kInt32));
    warp_size_probe<<<1, 64>>>(out.data_ptr<int>());
    return out;
}
"""

SCALE_HALF = """
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <ATen/hip/HIPContext.h>
template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* x, scalar_t* y, float s, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = static_cast<scalar_t>(static_cast<float>(x[i]) * s);
}
torch::Tensor scale(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    auto stream = at::hip::getCurrentHIPStream();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "scale", ([&] {
        hipLaunchKernelGGL(HIP_KERNEL_NAME(scale_kernel<scalar_t>), dim3((n + 255) / 256), dim3(256),
                           0, stream,
                           x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), (float)s, n);
    }));
    return y;
}
"""

HOST_ONLY = """
#include <hip/hip_runtime.h>
std::vector<torch::Tensor> shapes(torch::Tensor a, double s, int k, std::vector<int64_t> shape, bool flag) {
    TORCH_CHECK(a.dim() == 2, "need a 2-D tensor, got ", a.dim(), " dims ", a.sizes());
    auto filled = torch::empty({a.size(0), a.size(1)}, a.options().dtype(torch::kFloat64));
    filled.fill_(s * k);
    auto zeros = torch::zeros(shape, torch::dtype(torch::kInt32));
    a.data_ptr<float>()[0] = flag ? 42.f : -1.f;
    return {filled, zeros, a.contiguous().view({-1})};
}
int64_t count(torch::Tensor a) { return a.numel(); }
std::tuple<torch::Tensor, torch::Tensor> pair(const torch::Tensor& a) { return {a.t(), a.clone()}; }
"""


def _record(name: str, data: dict) -> None:
    """Build timings: printed (pytest -s) and appended to $HIPFORGE_TIMINGS_OUT/timings.jsonl if set."""
    print(f"[timing] {name}: {json.dumps(data)}")
    if os.environ.get("HIPFORGE_TIMINGS_OUT"):
        with open(Path(os.environ["HIPFORGE_TIMINGS_OUT"]) / "timings.jsonl", "a") as f:
            f.write(json.dumps({"name": name, **data}) + "\n")


@pytest.fixture(scope="module")
def backend() -> CudaBackend:
    backend = CudaBackend()  # the machine's compile cache: the runtime is built once per torch install
    if shutil.which("nvcc"):
        _record("runtime_warm", {"seconds": round(backend.warm(), 2)})
    return backend


# ---- without a GPU -----------------------------------------------------------------------------
SHIM_ONLY = """
#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void add4(const float4* a, const float4* b, float4* out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
__global__ void block_sum(const float* x, float* out, int n) {
    float v = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
    for (int d = warpSize / 2; d > 0; d >>= 1) v += __shfl_down(v, d);
    v += __shfl_xor(v, 0) - __shfl(v, __lane_id()) + 0.f * __shfl_up(v, 1);
    if (__any(v != 0.f) && __all(1) && __ballot(1) != 0ull && threadIdx.x % warpSize == 0) atomicAdd(out, v);
}
int run(int n) {
    float *a, *b, *o;
    hipMalloc(&a, n * sizeof(float)); hipMalloc(&b, n * sizeof(float)); hipMalloc(&o, n * sizeof(float));
    hipMemset(o, 0, n * sizeof(float));
    hipStream_t stream = 0;
    hipLaunchKernelGGL(add4, dim3((n / 4 + 255) / 256), dim3(256), 0, stream,
                       (const float4*)a, (const float4*)b, (float4*)o, n / 4);
    block_sum<<<1, 256>>>(a, o, n);
    hipError_t e = hipGetLastError();
    if (e != hipSuccess) printf("%s\\n", hipGetErrorString(e));
    hipDeviceSynchronize();
    hipFree(a); hipFree(b); hipFree(o);
    return e == hipSuccess;
}
"""


@needs_nvcc
def test_shim_compiles_hip_kernels_with_nvcc(tmp_path: Path) -> None:
    """The HIP shim alone (no torch): float4 kernel, __shfl_down reduction, hipLaunchKernelGGL."""
    src = tmp_path / "k.cu"
    src.write_text(SHIM_ONLY)
    proc = subprocess.run(
        [
            "nvcc",
            "-x",
            "cu",
            "-std=c++17",
            "-O3",
            "-arch=sm_90",
            f"-I{prelude.SHIM_INCLUDE}",
            "-c",
            str(src),
            "-o",
            str(tmp_path / "k.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    symbols = subprocess.run(["nm", "-C", str(tmp_path / "k.o")], capture_output=True, text=True).stdout
    assert "add4(" in symbols and "block_sum(" in symbols and "run(int)" in symbols


def test_scanner_finds_kernels_host_functions_and_declarations() -> None:
    fns = {f.name: f for f in source.functions(REDUCE + SCALE_HALF)}
    assert fns["row_sum"].is_device and fns["warp_sum"].is_device and fns["scale_kernel"].is_device
    assert not fns["row_sum_hip"].is_device
    assert (
        source.host_function(SCALE_HALF, "scale").declaration()
        == "torch::Tensor scale(torch::Tensor x, double s);"
    )
    device = source.device_only(SCALE_HALF + '\nPYBIND11_MODULE(m, m) { m.def("scale", &scale); }\n')
    assert "AT_DISPATCH" not in device and "PYBIND11_MODULE" not in device and "ATen/hip" not in device
    assert "scale_kernel(const scalar_t* x" in device
    assert device.count("\n") == (SCALE_HALF + '\nPYBIND11_MODULE(m, m) { m.def("scale", &scale); }\n').count(
        "\n"
    )


def test_prelude_includes_what_the_source_names() -> None:
    assert prelude.std_headers("std::min(a, b); std::vector<int> v;") == ["algorithm", "vector"]
    assert "iostream" in prelude.std_headers("using namespace std; cout << 1;")
    assert "cfloat" in prelude.std_headers("float m = -FLT_MAX;")
    assert "c10/util/Half.h" in prelude.lite_prelude("__half x;")
    assert "c10/util/Half.h" not in prelude.lite_prelude(ADD4)
    assert (prelude.stub_include_dir() / "torch" / "extension.h").exists()


def test_candidate_flags_and_function_names() -> None:
    assert nvcc_flags({"extra_cflags": ["-O3", "--offload-arch=gfx942", "-ffast-math", "-DBLOCK=128"]}) == [
        "-O3",
        "--use_fast_math",
        "-DBLOCK=128",
    ]
    assert function_names({"f": "doc", "g": "doc"}) == ["f", "g"]
    with pytest.raises(CompileError):
        function_names(["ok", "not ok"])


@needs_nvcc
def test_lite_build_runs_host_code_on_cpu_tensors(backend: CudaBackend) -> None:
    """nvcc + link + ctypes + the generic binder, end to end; CPU tensors, no kernel launched."""
    module = backend.load_inline("host_only", cpp_sources=HOST_ONLY, functions=["shapes", "count", "pair"])
    assert module.__hipforge_build__["mode"] == "lite"
    a = torch.ones(3, 4)
    filled, zeros, flat = module.shapes(a, 0.5, 3, [2, 5], True)
    assert filled.dtype == torch.float64 and filled[0, 0].item() == 1.5
    assert zeros.shape == (2, 5) and zeros.dtype == torch.int32
    assert a[0, 0].item() == 42.0 and flat.shape == (12,)
    assert module.count(a) == 12
    t, c = module.pair(a)
    assert t.shape == (4, 3) and torch.equal(c, a)
    with pytest.raises(RuntimeError, match="need a 2-D tensor, got 1 dims"):
        module.shapes(torch.ones(3), 1.0, 1, [1], False)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        module.shapes(torch.ones(2, 2, dtype=torch.float64), 1.0, 1, [1], False)
    with pytest.raises(TypeError):
        module.count(3)


@needs_nvcc
def test_lite_compile_error_points_at_the_candidate_line(backend: CudaBackend) -> None:
    broken = ADD4.replace("x.x + y.x", "x.x + bogus")
    with pytest.raises(CompileError) as err:
        backend.load_inline("broken", cpp_sources=broken, functions=["add4_hip"])
    assert "candidate.hip(7)" in err.value.log and "bogus" in err.value.log
    assert not LITE_GAP.search(err.value.log)


@needs_nvcc
def test_torch_api_outside_torch_lite_is_recognised_as_a_gap() -> None:
    lite_only = CudaBackend(mode="lite")
    src = ADD4.replace("return out;", "return torch::matmul(out, b);")
    with pytest.raises(CompileError) as err:
        lite_only.load_inline("gap", cpp_sources=src, functions=["add4_hip"])
    assert LITE_GAP.search(err.value.log)


@needs_nvcc
def test_kernels_compile_and_link_through_lite(backend: CudaBackend) -> None:
    for name, src, fns in [
        ("add4", ADD4, ["add4_hip"]),
        ("reduce", REDUCE, ["row_sum_hip", "warp_size_hip"]),
        ("scale", SCALE_HALF, ["scale"]),
    ]:
        module = backend.load_inline(name, cpp_sources=src, functions=fns)
        assert all(callable(getattr(module, f)) for f in fns)
        _record(f"lite_{name}", module.__hipforge_build__)


# ---- rocm twin (no ROCm here) ------------------------------------------------------------------
def test_rocm_settings_pick_hipcc_by_path_and_amd_platform() -> None:
    s = RocmSettings()
    assert s.arch == "gfx950" and s.env()["HIP_PLATFORM"] == "amd" and s.env()["CXX"] == "/opt/rocm/bin/hipcc"
    assert s.cflags()[0] == "--offload-arch=gfx950"
    assert RocmSettings(arch="gfx942", hipcc="/usr/bin/hipcc").cflags(["-DX"])[:1] + ["-DX"] == [
        "--offload-arch=gfx942",
        "-DX",
    ]
    with pytest.raises(ValueError):
        RocmSettings(arch="sm_90")
    backend = RocmBackend(arch="gfx942")
    assert backend.name == "rocm" and backend.torch_device == "cuda" and backend.settings.arch == "gfx942"


@pytest.mark.skipif(getattr(torch.version, "hip", None) is not None, reason="this torch is a ROCm build")
def test_rocm_backend_without_rocm_torch_says_so() -> None:
    with pytest.raises(CompileError) as err:
        RocmBackend().load_inline("x", cpp_sources=ADD4, functions=["add4_hip"])
    assert "ROCm build of torch" in str(err.value) and "torch.version.hip is None" in err.value.log


# ---- with a GPU --------------------------------------------------------------------------------
@needs_gpu
def test_gpu_float4_add_and_shfl_reduction(backend: CudaBackend) -> None:
    add = backend.load_inline("add4", cpp_sources=ADD4, functions=["add4_hip"])
    a, b = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    torch.testing.assert_close(add.add4_hip(a, b), a + b)
    red = backend.load_inline("reduce", cpp_sources=REDUCE, functions=["row_sum_hip", "warp_size_hip"])
    x = torch.randn(64, 4096, device="cuda")
    torch.testing.assert_close(red.row_sum_hip(x), x.sum(dim=1), rtol=1e-4, atol=1e-3)
    assert red.warp_size_hip(x).tolist() == [32, -1]  # NVIDIA: 32 lanes, ballot of a full warp


@needs_gpu
def test_gpu_dispatch_half_and_current_stream(backend: CudaBackend) -> None:
    mod = backend.load_inline("scale", cpp_sources=SCALE_HALF, functions=["scale"])
    side = torch.cuda.Stream()
    for dtype in (torch.float32, torch.float16, torch.float64):
        x = torch.randn(10_000, device="cuda", dtype=dtype)
        with torch.cuda.stream(side):
            y = mod.scale(x, 2.5)
        side.synchronize()
        torch.testing.assert_close(y, x * 2.5)


@needs_gpu
def test_gpu_falls_back_to_full_mode_for_torch_outside_lite(backend: CudaBackend) -> None:
    src = ADD4.replace("return out;", "return torch::matmul(out, b.view({-1, 1})).view({-1});")
    mod = backend.load_inline("gap", cpp_sources=src, functions=["add4_hip"])
    assert mod.__hipforge_build__["mode"] == "full"
    _record("full_fallback", mod.__hipforge_build__)
    a, b = torch.randn(256, device="cuda"), torch.randn(256, device="cuda")
    torch.testing.assert_close(mod.add4_hip(a, b), torch.matmul(a + b, b.view(-1, 1)).view(-1))


SELF_BOUND = """
#include <torch/extension.h>
#include <hip/hip_runtime.h>
__global__ void twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}
torch::Tensor twice_hip(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    hipLaunchKernelGGL(twice, dim3((n + 255) / 256), dim3(256), 0, 0,
                       x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice_hip", &twice_hip); }
"""


@needs_gpu
def test_gpu_self_binding_source_builds_in_full_mode(backend: CudaBackend) -> None:
    mod = backend.load_inline("self_bound", cpp_sources=SELF_BOUND)
    assert mod.__hipforge_build__["mode"] == "full"
    _record("full_self_binding", mod.__hipforge_build__)
    x = torch.randn(1000, device="cuda")
    torch.testing.assert_close(mod.twice_hip(x), 2 * x)


@needs_gpu
def test_gpu_cold_evaluation_wall_time(tmp_path: Path, backend: CudaBackend) -> None:
    """A fresh process: import torch, build a never-seen candidate (runtime warm), run, check."""
    backend.warm()
    salt = uuid.uuid4().hex[:8]
    script = textwrap.dedent(f"""
        import json, time
        t0 = time.perf_counter()
        import torch
        from hipforge.execution.cuda import CudaBackend
        src = {ADD4!r}.replace("add4(", "add4_{salt}(").replace("(add4,", "(add4_{salt},")
        mod = CudaBackend().load_inline("cold_{salt}", cpp_sources=src, functions=["add4_hip"])
        a, b = torch.randn(1 << 22, device="cuda"), torch.randn(1 << 22, device="cuda")
        ok = torch.allclose(mod.add4_hip(a, b), a + b)
        torch.cuda.synchronize()
        print(json.dumps({{"ok": ok, "wall_s": time.perf_counter() - t0, "build": mod.__hipforge_build__}}))
    """)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = time.perf_counter() - start
    _record("cold_evaluation", result)
    assert result["ok"] and not result["build"]["cached"]
    assert result["process_wall_s"] <= float(os.environ.get("HIPFORGE_COLD_EVAL_BUDGET_S", "10"))
