"""The HIP-on-NVIDIA shim covers the HIP runtime API and device intrinsics kernels use.

Without a GPU: one HIP source using every API family compiles with the cuda backend's own nvcc
invocation (sm_90), and the gfx950 gate (real ROCm headers, no shim) accepts the same source; a
KernelBench-style candidate that times itself with hipEvents builds through CudaBackend; the name
table is what the generator makes from HIP's NVIDIA header.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import torch

from hipforge.execution import gate
from hipforge.execution.cuda import CudaBackend, hip_names, prelude, shim_gen
from hipforge.execution.cuda.toolchain import Toolchain, run

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
needs_gate = pytest.mark.skipif(not gate.available(), reason="clang-22 / HIP headers not installed")
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# Every API family, in the spellings AMD's headers accept (HIP 6.2+ names behind HIP_VERSION, as
# portable candidates write them; the gate's headers are HIP 5.2).
ALL_APIS = r"""
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_ext.h>
#if HIP_VERSION >= 60000000
#include <hip/hip_bf16.h>
typedef __hip_bfloat16 bf16_t;
#else
#include <hip/hip_bfloat16.h>
typedef hip_bfloat16 bf16_t;
#endif

__constant__ float c_scale[4];
__device__ float d_bias;

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_down(v, o);
    return v;
}

template <typename T>
__global__ void every_intrinsic(const T* __restrict__ x, float* out, __half* h, bf16_t* b, int* counts,
                                unsigned long long* ballots, double* dsum, int n) {
    extern __shared__ float smem[];
    int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    float v = i < n ? static_cast<float>(__ldg(&x[i])) : 0.f;
    v = __expf(v) * c_scale[0] + __fdividef(v, 3.f) + __logf(1.f + fabsf(v)) + __saturatef(v) +
        __frsqrt_rn(4.f) + __fmaf_rn(v, 2.f, 1.f) + __sinf(v) + __cosf(v) + __powf(2.f, v) + rsqrtf(2.f) + d_bias;
    float w = warp_sum(v);
    w += __shfl(w, 0) + __shfl_up(w, 1) + __shfl_xor(w, 1) + __shfl(w, 0, 16) + __shfl_down(w, 1, 16);
#if HIP_VERSION >= 60200000
    const unsigned long long full = ~0ull;  // HIP's masks are 64-bit
    w += __shfl_down_sync(full, w, 1) + __shfl_xor_sync(full, w, 2) + __shfl_sync(full, w, 0) +
         __shfl_up_sync(full, w, 1);
#endif
    unsigned long long ballot = __ballot(v > 0.f);
#if HIP_VERSION >= 60200000
    ballot |= __ballot_sync(full, v > 1.f) + __any_sync(full, v > 2.f) + __all_sync(full, v > 3.f);
#endif
    int any = __any(v > 0.f), all = __all(v >= 0.f);
    int count = __syncthreads_count(v > 0.f), both = __syncthreads_and(v >= 0.f), either = __syncthreads_or(v > 0.f);
    smem[threadIdx.x] = w;
    __syncthreads();
    __threadfence_block();
    __threadfence();
    if (__lane_id() == 0) {
        ballots[blockIdx.x] = ballot;
        atomicAdd(out, w);
        unsafeAtomicAdd(out + 1, w);
        atomicAdd(dsum, static_cast<double>(w));
    }
    atomicMax(counts, count);
    atomicMin(counts + 1, any);
    atomicCAS(counts + 2, 0, all);
    atomicExch(counts + 3, both + either);
    atomicAnd(counts + 4, 1);
    atomicOr(counts + 5, 2);
    atomicXor(counts + 6, 3);
    atomicSub(counts + 7, 1);
    atomicInc(reinterpret_cast<unsigned int*>(counts + 8), 100u);
    __half hv = __hadd(__float2half(v), __float2half(1.f));
    __half2 h2 = __hadd2(__half2half2(hv), __half2half2(hv));
    if (i < n) h[i] = __hmul(hv, hv);
    float back = __half2float(hv) + __low2float(h2);
    bf16_t bv = bf16_t(back);
#if HIP_VERSION >= 60000000
    back += __bfloat162float(__float2bfloat16(back));
#endif
    if (i < n) {
        b[i] = bv;
        out[2 + i] = smem[(threadIdx.x + 1) % blockDim.x] + static_cast<float>(bv) +
                     float(__popc(static_cast<unsigned>(ballot)) + __clzll(static_cast<long long>(ballot)) +
                           __ffs(static_cast<int>(ballot)) + (int)(clock64() & 1));
    }
}

static void host_fn(void* user) { *static_cast<int*>(user) += 1; }
static void stream_cb(hipStream_t, hipError_t status, void* user) { *static_cast<int*>(user) += status == hipSuccess; }

#define CHECK(expr) do { hipError_t e_ = (expr); if (e_ != hipSuccess) return -static_cast<int64_t>(e_); } while (0)

int64_t exercise(int64_t n) {
    int dev = 0, count = 0;
    CHECK(hipGetDeviceCount(&count));
    CHECK(hipGetDevice(&dev));
    CHECK(hipSetDevice(dev));
    hipDeviceProp_t prop;
    CHECK(hipGetDeviceProperties(&prop, dev));
    int64_t facts = prop.multiProcessorCount + prop.maxThreadsPerBlock + (int64_t)prop.sharedMemPerBlock +
                    prop.warpSize + (int64_t)prop.maxSharedMemoryPerMultiProcessor + prop.clockRate +
                    prop.memoryClockRate + prop.l2CacheSize + prop.major * 10 + prop.minor + prop.regsPerBlock +
                    prop.maxThreadsPerMultiProcessor +
                    (int64_t)(prop.totalGlobalMem >> 20) + prop.maxGridSize[0] + prop.maxThreadsDim[0] +
                    (prop.gcnArchName[0] == 'g') + prop.name[0];
#ifdef __HIP_PLATFORM_NVIDIA__
    const char want[] = {'s', 'm', '_', char('0' + prop.major), char('0' + prop.minor), 0};
    for (unsigned i = 0; i < sizeof want; ++i) if (prop.gcnArchName[i] != want[i]) return -100000;  // sm_90
#endif
    int attr = 0;
    const hipDeviceAttribute_t attrs[] = {
        hipDeviceAttributeMultiprocessorCount, hipDeviceAttributeMaxThreadsPerBlock,
        hipDeviceAttributeMaxSharedMemoryPerBlock, hipDeviceAttributeSharedMemPerBlockOptin,
        hipDeviceAttributeWarpSize, hipDeviceAttributeComputeCapabilityMajor, hipDeviceAttributeL2CacheSize,
        hipDeviceAttributeClockRate, hipDeviceAttributeMaxSharedMemoryPerMultiprocessor};
    for (hipDeviceAttribute_t a : attrs) { CHECK(hipDeviceGetAttribute(&attr, a, dev)); facts += attr; }

    int least = 0, greatest = 0, priority = 0;
    unsigned int stream_flags = 0;
    CHECK(hipDeviceGetStreamPriorityRange(&least, &greatest));
    hipStream_t s1, s2, s3;
    CHECK(hipStreamCreate(&s1));
    CHECK(hipStreamCreateWithFlags(&s2, hipStreamNonBlocking));
    CHECK(hipStreamCreateWithPriority(&s3, hipStreamDefault, greatest));
    CHECK(hipStreamGetPriority(s3, &priority));
    CHECK(hipStreamGetFlags(s2, &stream_flags));
    hipEvent_t e0, e1, e2;
    CHECK(hipEventCreate(&e0));
    CHECK(hipEventCreateWithFlags(&e1, hipEventDefault));
    CHECK(hipEventCreateWithFlags(&e2, hipEventDisableTiming | hipEventBlockingSync));

    size_t free_bytes = 0, total_bytes = 0;
    CHECK(hipMemGetInfo(&free_bytes, &total_bytes));
    const size_t bytes = n * sizeof(float);
    float *x, *out, *host, *pinned, *pitched, *managed;
    __half* h;
    bf16_t* b;
    int* counts;
    unsigned long long* ballots;
    double* dsum;
    void* scratch;
    size_t pitch = 0;
    CHECK(hipMalloc(&x, bytes));
    CHECK(hipMalloc((void**)&out, bytes + 2 * sizeof(float)));
    CHECK(hipMalloc(&h, n * sizeof(__half)));
    CHECK(hipMalloc(&b, n * sizeof(bf16_t)));
    CHECK(hipMalloc(&counts, 16 * sizeof(int)));
    CHECK(hipMalloc(&ballots, 1024 * sizeof(unsigned long long)));
    CHECK(hipMalloc(&dsum, sizeof(double)));
    CHECK(hipMallocAsync(&scratch, 256, s1));
    CHECK(hipFreeAsync(scratch, s1));
    CHECK(hipMallocManaged((void**)&managed, 64));
    CHECK(hipMallocPitch((void**)&pitched, &pitch, 16 * sizeof(float), 4));
    CHECK(hipHostMalloc(&host, bytes));
    CHECK(hipHostMalloc((void**)&pinned, 64, hipHostMallocDefault));

    CHECK(hipMemcpy(x, host, bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpyAsync(host, x, bytes, hipMemcpyDeviceToHost, s1));
    CHECK(hipMemcpyAsync(out, x, bytes, hipMemcpyDeviceToDevice, s2));
    CHECK(hipMemcpy(host, host + 1, sizeof(float), hipMemcpyHostToHost));
    CHECK(hipMemcpy(out, x, sizeof(float), hipMemcpyDefault));
    CHECK(hipMemcpy2D(pitched, pitch, host, 16 * sizeof(float), 16 * sizeof(float), 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy2DAsync(host, 16 * sizeof(float), pitched, pitch, 16 * sizeof(float), 4, hipMemcpyDeviceToHost, s1));
    float scale[4] = {1.f, 2.f, 3.f, 4.f};
    CHECK(hipMemcpyToSymbol(HIP_SYMBOL(c_scale), scale, sizeof(scale)));
    CHECK(hipMemcpyToSymbolAsync(HIP_SYMBOL(d_bias), scale, sizeof(float), 0, hipMemcpyHostToDevice, s1));
    CHECK(hipMemcpyFromSymbol(scale, HIP_SYMBOL(c_scale), sizeof(scale)));
    CHECK(hipMemcpyFromSymbolAsync(scale, HIP_SYMBOL(d_bias), sizeof(float), 0, hipMemcpyDeviceToHost, s1));
    CHECK(hipMemset(out, 0, bytes));
    CHECK(hipMemsetAsync(dsum, 0, sizeof(double), s1));
    CHECK(hipMemsetD32(counts, 0, 16));
    CHECK(hipMemsetD32Async(counts, 7, 4, s2));
    CHECK(hipMemsetD8(h, 0, n * sizeof(__half)));

    int grid = 0, block = 0, active = 0;
    const size_t smem = 1024 * sizeof(float);
    CHECK(hipOccupancyMaxPotentialBlockSize(&grid, &block, every_intrinsic<float>, smem, 0));
    CHECK(hipOccupancyMaxActiveBlocksPerMultiprocessor(&active, every_intrinsic<float>, block, smem));
    const void* kernel = reinterpret_cast<const void*>(&every_intrinsic<float>);
    hipFuncAttributes fattr;
    CHECK(hipFuncGetAttributes(&fattr, kernel));
    facts += fattr.numRegs + fattr.maxThreadsPerBlock + (int64_t)fattr.sharedSizeBytes;
    facts += active + priority + stream_flags;
    CHECK(hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
    CHECK(hipFuncSetCacheConfig(kernel, hipFuncCachePreferShared));

    int blocks = (int)((n + block - 1) / block), ni = (int)n;
    CHECK(hipEventRecord(e0, 0));
    hipLaunchKernelGGL(HIP_KERNEL_NAME(every_intrinsic<float>), dim3(blocks), dim3(block), smem, s1,
                       x, out, h, b, counts, ballots, dsum, ni);
    every_intrinsic<float><<<blocks, block, smem, s2>>>(x, out, h, b, counts, ballots, dsum, ni);
    void* args[] = {&x, &out, &h, &b, &counts, &ballots, &dsum, &ni};
    CHECK(hipLaunchKernel(kernel, dim3(blocks), dim3(block), args, smem, s1));
    hipExtLaunchKernelGGL(every_intrinsic<float>, dim3(blocks), dim3(block), smem, s1, e0, e1, 0,
                          (const float*)x, out, h, b, counts, ballots, dsum, ni);
    CHECK(hipGetLastError());
    CHECK(hipPeekAtLastError());
    CHECK(hipEventRecord(e1));
    CHECK(hipStreamWaitEvent(s2, e1, 0));
    CHECK(hipEventRecord(e2, s2));
    int calls = 0;
    CHECK(hipLaunchHostFunc(s1, host_fn, &calls));
    CHECK(hipStreamAddCallback(s1, stream_cb, &calls, 0));
    CHECK(hipStreamSynchronize(s1));
    hipError_t q = hipStreamQuery(s2);
    if (q != hipSuccess && q != hipErrorNotReady) return -static_cast<int64_t>(q);
    q = hipEventQuery(e2);
    if (q != hipSuccess && q != hipErrorNotReady) return -static_cast<int64_t>(q);
    CHECK(hipEventSynchronize(e1));
    float ms = 0.f;
    CHECK(hipEventElapsedTime(&ms, e0, e1));
    CHECK(hipDeviceSynchronize());

    const hipError_t codes[] = {hipErrorInvalidValue, hipErrorOutOfMemory, hipErrorNotInitialized,
                                hipErrorInvalidDevice, hipErrorInvalidConfiguration, hipErrorNotReady,
                                hipErrorLaunchFailure, hipErrorInvalidDeviceFunction, hipErrorNoDevice,
                                hipErrorNotSupported, hipErrorIllegalAddress, hipErrorInvalidHandle,
                                hipErrorLaunchOutOfResources, hipErrorUnknown};
    for (hipError_t c : codes) facts += c != hipSuccess && hipGetErrorName(c)[0] != 0 && hipGetErrorString(c)[0] != 0;

    CHECK(hipFree(x)); CHECK(hipFree(out)); CHECK(hipFree(h)); CHECK(hipFree(b)); CHECK(hipFree(counts));
    CHECK(hipFree(ballots)); CHECK(hipFree(dsum)); CHECK(hipFree(pitched)); CHECK(hipFree(managed));
    CHECK(hipHostFree(host)); CHECK(hipHostFree(pinned));
    CHECK(hipEventDestroy(e0)); CHECK(hipEventDestroy(e1)); CHECK(hipEventDestroy(e2));
    CHECK(hipStreamDestroy(s1)); CHECK(hipStreamDestroy(s2)); CHECK(hipStreamDestroy(s3));
    return facts + calls + static_cast<int64_t>(ms);
}
"""

# A KernelBench-style candidate that times its kernel with hipEvents on the default stream and on
# torch's current stream, and sizes its launch with hipMemGetInfo / hipOccupancyMaxPotentialBlockSize.
TIMED_CANDIDATE = '''
import os
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

cpp_src = "torch::Tensor timed_relu(torch::Tensor x);"
hip_src = r"""
#include <hip/hip_runtime.h>
#include <torch/extension.h>
#include <ATen/hip/HIPContext.h>
#include <c10/hip/HIPStream.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor timed_relu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 GPU tensor");
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    size_t free_bytes = 0, total_bytes = 0;
    C10_HIP_CHECK(hipMemGetInfo(&free_bytes, &total_bytes));
    TORCH_CHECK(free_bytes <= total_bytes, "hipMemGetInfo: free ", free_bytes, " > total ", total_bytes);
    int min_grid = 0, block = 0;
    C10_HIP_CHECK(hipOccupancyMaxPotentialBlockSize(&min_grid, &block, relu_kernel, 0, 0));
    int grid = (int)std::max<int64_t>((n + block - 1) / block, 1);
    hipEvent_t start, stop;
    C10_HIP_CHECK(hipEventCreateWithFlags(&start, hipEventDefault));
    C10_HIP_CHECK(hipEventCreate(&stop));
    C10_HIP_CHECK(hipEventRecord(start, 0));
    hipStream_t stream = c10::hip::getCurrentHIPStream();
    hipLaunchKernelGGL(relu_kernel, dim3(grid), dim3(block), 0, stream, x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_HIP_KERNEL_LAUNCH_CHECK();
    C10_HIP_CHECK(hipEventRecord(stop, at::cuda::getCurrentCUDAStream()));
    C10_HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    C10_HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    C10_HIP_CHECK(hipEventDestroy(start));
    C10_HIP_CHECK(hipEventDestroy(stop));
    TORCH_CHECK(ms >= 0.f, "negative elapsed time ", ms);
    return y;
}
"""

module = load_inline(
    name="timed_relu",
    cpp_sources=cpp_src,
    cuda_sources=hip_src,
    functions=["timed_relu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.module.timed_relu(x)
'''


def _nm(obj: Path) -> str:
    return subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True, check=True).stdout


@needs_nvcc
def test_every_api_family_compiles_with_the_backends_nvcc(tmp_path: Path) -> None:
    """The lite translation unit and nvcc command CudaBackend builds, for sm_90, warning-free."""
    tc = Toolchain()
    assert tc.arch == "sm_90"
    (tmp_path / "candidate.cu").write_text(prelude.lite_translation_unit(ALL_APIS, ["exercise"]))
    cmd = tc.compile_candidate(
        tmp_path / "candidate.cu", tmp_path / "candidate.o", prelude.lite_include_dirs(shim=True), []
    )
    _, log = run(cmd, "nvcc", tc.timeout_s, cwd=tmp_path)
    assert "warning" not in log, log  # HIP's 64-bit shuffle masks narrow explicitly, not by truncation
    symbols = _nm(tmp_path / "candidate.o")
    assert "every_intrinsic<float>(" in symbols and "__hf_tramp_exercise" in symbols
    assert "hf_memset_fill<unsigned int>" in symbols  # hipMemsetD32 is a kernel of the shim's own


@needs_nvcc
def test_shim_adds_no_kernel_a_source_does_not_use(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] = 0.f; }\n")
    proc = subprocess.run(
        ["nvcc", "-x", "cu", "-arch=sm_90", f"-I{prelude.SHIM_INCLUDE}", "-c", str(src), "-o", str(tmp_path / "k.o")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "hf_memset_fill" not in _nm(tmp_path / "k.o")


@needs_nvcc
def test_cuda_headers_included_after_the_shim_still_compile(tmp_path: Path) -> None:
    """HIP's warp-vote names must not rewrite CUDA's own headers (libcu++ has a `struct __any`)."""
    src = tmp_path / "cg.cu"
    src.write_text(
        "#include <hip/hip_runtime.h>\n#include <hip/hip_cooperative_groups.h>\n"
        "#include <cooperative_groups/reduce.h>\n#include <cuda/std/functional>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void k(float* x) {\n"
        "  auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  x[threadIdx.x] = cg::reduce(tile, x[threadIdx.x], cg::plus<float>()) + __any(x[0] > 0.f) + __all(1);\n"
        "}\n"
    )
    cmd = ["nvcc", "-x", "cu", "-std=c++20", "-arch=sm_90", f"-I{prelude.SHIM_INCLUDE}", "-c", str(src)]
    proc = subprocess.run([*cmd, "-o", str(tmp_path / "cg.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@needs_gate
def test_gfx950_gate_accepts_the_same_source() -> None:
    result = gate.gate(ALL_APIS)
    assert result.ok and not result.device_only, result.log  # host code checked against ROCm's API too


@needs_gate
def test_gfx950_gate_accepts_the_timed_candidate() -> None:
    result = gate.gate_candidate(TIMED_CANDIDATE)
    assert result.ok and not result.device_only, result.log


@pytest.fixture(scope="module")
def backend() -> CudaBackend:
    backend = CudaBackend(mode="lite")  # torch-lite has every torch API the candidate uses
    if shutil.which("nvcc"):
        backend.warm()  # the runtime, once per torch install (kept in the machine's compile cache)
    return backend


@needs_nvcc
def test_timed_candidate_builds_through_cuda_backend(backend: CudaBackend) -> None:
    """nvcc, link and load: everything short of running on a GPU."""
    cpp_src, hip_src = gate.hip_sources(TIMED_CANDIDATE)
    module = backend.load_inline("timed_relu", cpp_sources=cpp_src, cuda_sources=hip_src, functions=["timed_relu"])
    build = module.__hipforge_build__
    assert build["mode"] == "lite" and build["arch"] == "sm_90" and callable(module.timed_relu)
    with pytest.raises(RuntimeError, match="x must be a float32 GPU tensor"):
        module.timed_relu(torch.ones(4))  # host code runs; a CPU tensor is refused


def test_generated_table_names_every_family_and_no_driver_api() -> None:
    text = shim_gen.OUT.read_text()
    assert text.startswith("// GENERATED by hipforge/execution/cuda/shim_gen.py")
    defined = set(re.findall(r"^#define (\w+)", text, re.M)) | set(re.findall(r"^typedef .* (\w+);$", text, re.M))
    wanted = """hipStreamCreateWithPriority hipDeviceGetStreamPriorityRange hipStreamWaitEvent hipEventCreateWithFlags
    hipEventRecord hipEventElapsedTime hipLaunchHostFunc hipStreamAddCallback hipMemGetInfo hipMallocAsync hipFreeAsync
    hipMemcpy2D hipMemcpyFromSymbol hipMemsetAsync hipHostFree hipMemcpyHostToHost hipGetDeviceCount hipSetDevice
    hipDeviceAttributeSharedMemPerBlockOptin hipOccupancyMaxActiveBlocksPerMultiprocessor hipFuncGetAttributes
    hipFuncSetCacheConfig hipGetErrorName hipErrorNotReady hipLaunchKernel hipStream_t hipEvent_t""".split()
    assert not [n for n in wanted if n not in defined]
    assert not re.search(r"^#define \w+ .*\bcu[A-Z]", text, re.M)  # no driver API: candidates link cudart only
    assert not set(shim_gen.HANDWRITTEN) & defined


HIP_INCLUDE = Path(gate.CompileGate().rocm_path) / "include" / "hip"


@needs_nvcc
@pytest.mark.skipif(not (HIP_INCLUDE / shim_gen.NVIDIA_HEADER).is_file(), reason="HIP's NVIDIA headers not installed")
def test_committed_table_is_what_the_generator_makes() -> None:
    committed = shim_gen.OUT.read_text()
    if f"// checked against: {shim_gen.nvcc_version()}" not in committed:
        pytest.skip("the table was checked against another nvcc")
    text, kept, read = shim_gen.generate(HIP_INCLUDE)
    assert text == committed and 0 < kept < read  # some names have no CUDA counterpart and are dropped


def test_generator_reads_wrappers_that_forward_their_parameters() -> None:
    header = """
inline static hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream __dparm(NULL)) {
    return hipCUDAErrorTohipError(cudaEventRecord(event, stream));
}
inline static hipError_t hipMemcpy(void* dst, const void* src, size_t n, hipMemcpyKind kind) {
    return hipCUDAErrorTohipError(cudaMemcpy(dst, src, n, hipMemcpyKindToCudaMemcpyKind(kind)));
}
inline static hipError_t hipSwapped(int a, int b) { return hipCUDAErrorTohipError(cudaSwapped(b, a)); }
inline static hipError_t hipTwoSteps(int* a) { int x = 0; return hipCUDAErrorTohipError(cudaTwo(a)); }
inline static hipError_t hipMemsetD8(hipDeviceptr_t d, unsigned char v, size_t n) {
    return hipCUResultTohipError(cuMemsetD8(d, v, n));
}
"""
    found = {e.hip: e.line for e in hip_names.wrappers(header)}
    assert found == {
        "hipEventRecord": "#define hipEventRecord cudaEventRecord",
        "hipMemcpy": "#define hipMemcpy cudaMemcpy",
    }


# ---- with a GPU (the H200 host): the shim's calls behave --------------------------------------------
@needs_gpu
def test_gpu_every_api_family_runs(backend: CudaBackend) -> None:
    module = backend.load_inline("all_apis", cpp_sources=ALL_APIS, functions=["exercise"])
    result = module.exercise(4096)
    assert result != -100000, "hipDeviceProp_t.gcnArchName is not sm_<major><minor>"
    assert result > 0, f"a HIP call failed with error {-result}"


@needs_gpu
def test_gpu_timed_candidate_matches_torch(backend: CudaBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "load_inline", backend.load_inline)
    namespace: dict = {}
    start = time.perf_counter()
    exec(compile(TIMED_CANDIDATE, "timed_candidate.py", "exec"), namespace)
    x = torch.randn(1 << 20, device="cuda")
    y = namespace["ModelNew"]()(x)
    torch.cuda.synchronize()
    assert torch.equal(y, torch.relu(x)), f"built and ran in {time.perf_counter() - start:.1f} s"
