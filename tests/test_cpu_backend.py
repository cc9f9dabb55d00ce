"""The cpu backend: hand-written HIP candidates (tests/kernels) compiled with g++ and run on
CPU fibers, judged against their PyTorch references at wavefront sizes 64 and 32.

Kernel builds go to a per-session cache; the precompiled header and the runtime library go
to the shared default cache (built once per machine). All builds run up front, in parallel.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hipforge.execution.backend import CompileError  # noqa: E402
from hipforge.execution.compile_cache import CompileCache  # noqa: E402
from hipforge.execution.cpu import CpuBackend  # noqa: E402
from hipforge.execution.cpu.cxx_scan import mask_source  # noqa: E402
from hipforge.execution.cpu.rewrite import rewrite  # noqa: E402
from hipforge.execution.cpu.toolchain import HERE  # noqa: E402

KERNELS = Path(__file__).parent / "kernels"
REPO = Path(__file__).resolve().parents[1]
WAVEFRONTS = (64, 32)
MATCHING = [
    "elementwise_float4",
    "row_sum_shfl",
    "divergent_warp_reduce",
    "atomic_histogram",
    "tiled_gemm",
    "softmax_dynamic_smem",
    "hip_launch_ggl",
    "warp_primitives",
]
JOBS = [(n, w) for n in MATCHING + ["warp64_hardcoded"] for w in WAVEFRONTS]
JOBS += [("deadlock_barrier", 64), ("compile_error", 64)]

BRIDGE_SRC = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <tuple>
__global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
std::tuple<torch::Tensor, int64_t> axpy_copy(torch::Tensor x, const torch::Tensor& y, double a, int reps,
                                              bool negate, std::vector<int64_t> shape,
                                              c10::optional<torch::Tensor> bias) {
    TORCH_CHECK(x.numel() == y.numel(), "size mismatch: ", x.numel(), " vs ", y.numel());
    auto out = y.clone();
    for (int r = 0; r < reps; ++r)
        axpy<<<(x.numel() + 63) / 64, 64>>>(negate ? -(float)a : (float)a, x.data_ptr<float>(),
                                            out.data_ptr<float>(), x.numel());
    if (bias) out += *bias;
    return {out.view(shape), out.numel()};
}
std::vector<torch::Tensor> split2(torch::Tensor x) { return {x.slice(0, 0, 1), x.slice(0, 1)}; }
#include <hip/hip_fp16.h>
__global__ void half_twice(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(__half2float(__hadd(x[i], x[i])) + 0.5f);
}
torch::Tensor half_op(torch::Tensor x) {
    auto y = torch::empty_like(x);
    half_twice<<<(x.numel() + 63) / 64, 64>>>(reinterpret_cast<const __half*>(x.data_ptr<at::Half>()),
                                               reinterpret_cast<__half*>(y.data_ptr<at::Half>()), x.numel());
    return y;
}
"""

PYBIND_SRC = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
__global__ void neg_kernel(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = -a[i];
}
torch::Tensor neg(torch::Tensor a) {
    auto out = torch::empty_like(a);
    neg_kernel<<<(a.numel() + 127) / 128, 128>>>(a.data_ptr<float>(), out.data_ptr<float>(), a.numel());
    return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("neg", &neg, "negate"); }
"""


def _import(path: Path, modname: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_tls = threading.local()


def _routed_load_inline(*args, **kwargs):
    return _tls.backend.load_inline(*args, **kwargs)


class Built:
    """Every candidate of the session, imported through the cpu backend."""

    def __init__(self, kernel_cache: Path, shared_cache: CompileCache) -> None:
        self.kernel_cache = kernel_cache
        self.shared_cache = shared_cache
        self.backends = {
            w: CpuBackend(w, cache=CompileCache(kernel_cache), pch_cache=shared_cache) for w in WAVEFRONTS
        }
        self.modules: dict[tuple[str, int], types.ModuleType | BaseException] = {}
        self.seconds: dict[tuple[str, int], float] = {}

    def import_candidate(self, name: str, wavefront: int) -> None:
        _tls.backend = self.backends[wavefront]
        t0 = time.perf_counter()
        try:
            self.modules[name, wavefront] = _import(KERNELS / f"{name}_hip.py", f"{name}_hip_w{wavefront}")
        except BaseException as e:  # noqa: BLE001 -- reported by the test that needs it
            self.modules[name, wavefront] = e
        self.seconds[name, wavefront] = time.perf_counter() - t0

    def build_extra(self, key: str, fn) -> None:
        t0 = time.perf_counter()
        try:
            self.modules[key, 0] = fn()
        except BaseException as e:  # noqa: BLE001
            self.modules[key, 0] = e
        self.seconds[key, 0] = time.perf_counter() - t0

    def module(self, name: str, wavefront: int = 0) -> types.ModuleType:
        mod = self.modules[name, wavefront]
        if isinstance(mod, BaseException):
            raise mod
        return mod


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Built:
    shared = CompileCache()  # precompiled header + runtime libraries, shared across sessions
    b = Built(tmp_path_factory.mktemp("cpu-kernels"), shared)
    # the shared parts first (one build each, reused by every kernel)
    t0 = time.perf_counter()
    b.backends[64].toolchain.precompiled_prelude(shared)
    for w in WAVEFRONTS:
        b.backends[w].toolchain.runtime_library(shared, w)
    shared_s = time.perf_counter() - t0
    from torch.utils import cpp_extension

    saved_cxx, saved_load = os.environ.get("CXX"), cpp_extension.load_inline
    cpp_extension.load_inline = _routed_load_inline
    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            # the slow full-torch build first, so the bridge builds overlap it
            futures = [
                pool.submit(
                    b.build_extra, "pybind", lambda: b.backends[64].load_inline("pybind_neg", PYBIND_SRC)
                ),
                pool.submit(
                    b.build_extra,
                    "bridge",
                    lambda: b.backends[64].load_inline(
                        "bridge_args", BRIDGE_SRC, functions=["axpy_copy", "split2", "half_op"]
                    ),
                ),
            ]
            futures += [pool.submit(b.import_candidate, n, w) for n, w in JOBS]
            for f in futures:
                f.result()
    finally:
        cpp_extension.load_inline = saved_load
        if saved_cxx is None:
            os.environ.pop("CXX", None)
        else:
            os.environ["CXX"] = saved_cxx
    wall = time.perf_counter() - t0
    lines = [
        f"shared parts (PCH, runtime libraries): {shared_s:.1f} s; {len(b.seconds)} builds: {wall:.1f} s wall"
    ]
    lines += [f"  {n} w{w}: {s:.1f} s" for (n, w), s in sorted(b.seconds.items())]
    print("\n[cpu backend builds]\n" + "\n".join(lines))
    return b


def _run_pair(built: Built, name: str, wavefront: int, seeds=(0, 1, 2)) -> list[bool]:
    cand = built.module(name, wavefront)
    ref = _import(KERNELS / f"{name}_ref.py", f"{name}_ref")
    results = []
    for seed in seeds:
        torch.manual_seed(seed)
        init = ref.get_init_inputs()
        model, model_new = ref.Model(*init), cand.ModelNew(*init)
        inputs = ref.get_inputs()
        expected = model(*inputs)
        got = model_new(*inputs)
        results.append(got.shape == expected.shape and torch.allclose(got, expected, atol=1e-4, rtol=1e-4))
    return results


# ---------------------------------------------------------------------- candidates
@pytest.mark.parametrize("wavefront", WAVEFRONTS)
@pytest.mark.parametrize("name", MATCHING)
def test_candidate_matches_reference(built, name, wavefront):
    assert _run_pair(built, name, wavefront) == [True, True, True]


def test_kernel_hardcoding_64_lanes_is_right_at_64_wrong_at_32(built):
    assert _run_pair(built, "warp64_hardcoded", 64) == [True, True, True]
    assert _run_pair(built, "warp64_hardcoded", 32) == [False, False, False]


DEADLOCK_SCRIPT = r"""
import importlib.util, sys
from pathlib import Path
from unittest import mock
import torch
from hipforge.execution.compile_cache import CompileCache
from hipforge.execution.cpu import CpuBackend
be = CpuBackend(64, cache=CompileCache(Path(sys.argv[1])), pch_cache=CompileCache(Path(sys.argv[2])))
with mock.patch("torch.utils.cpp_extension.load_inline", be.load_inline):
    spec = importlib.util.spec_from_file_location("deadlock_barrier_hip", sys.argv[3])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
mod.ModelNew()(torch.randn(4, 128))
print("returned")
"""


def test_deadlocking_barrier_aborts_naming_the_line(built):
    src = built.module("deadlock_barrier", 64).src
    lines = src.splitlines()
    line_a = next(i for i, t in enumerate(lines, 1) if "BARRIER_A" in t)
    line_b = next(i for i, t in enumerate(lines, 1) if "BARRIER_B" in t)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            DEADLOCK_SCRIPT,
            str(built.kernel_cache),
            str(built.shared_cache.root),
            str(KERNELS / "deadlock_barrier_hip.py"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode != 0 and "returned" not in proc.stdout
    assert "deadlock in kernel 'reverse_rows'" in proc.stderr
    assert f"barrier at line {line_a} can never release" in proc.stderr
    # the candidate's own file and line (the lite build names it as the cuda backend does)
    assert f"candidate.hip:{line_a}" in proc.stderr and f"candidate.hip:{line_b}" in proc.stderr


def test_compile_error_carries_the_compiler_log(built):
    err = built.modules["compile_error", 64]
    assert isinstance(err, CompileError)
    src = (KERNELS / "compile_error_hip.py").read_text().split('src = r"""', 1)[1]
    line = next(i for i, t in enumerate(src.splitlines(), 1) if "scale_factor;" in t)
    assert "error" in err.log and "scale_factor" in err.log
    assert f"main.cpp:{line}:" in err.log  # lines of the candidate's own source
    # a failed build is cached as well: the second attempt answers at once with the same log
    t0 = time.perf_counter()
    with pytest.raises(CompileError) as again:
        built.backends[64].load_inline(
            "compile_error",
            (KERNELS / "compile_error_hip.py").read_text().split('src = r"""', 1)[1].split('"""', 1)[0],
            functions=["twice"],
        )
    assert time.perf_counter() - t0 < 5 and again.value.log == err.log


# ---------------------------------------------------------------------- bridge and builds
def test_bridge_converts_arguments_and_results_like_pybind(built):
    mod = built.module("bridge")
    x, y = torch.arange(6.0), torch.ones(6)
    out, n = mod.axpy_copy(x, y, 0.5, 2, False, [2, 3], None)
    assert n == 6 and out.shape == (2, 3) and torch.equal(out.flatten(), y + x)
    out, _ = mod.axpy_copy(x, y, 1, 1, True, (3, 2), torch.full((6,), 2.0))
    assert torch.equal(out.flatten(), y - x + 2)
    assert torch.equal(y, torch.ones(6))  # inputs untouched
    a, b = mod.split2(torch.arange(4.0))
    assert a.tolist() == [0.0] and b.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mod.axpy_copy(x, y)
    with pytest.raises(TypeError, match="argument 3"):
        mod.axpy_copy(x, y, "a", 1, False, [6], None)
    with pytest.raises(RuntimeError, match="size mismatch: 6 vs 5"):
        mod.axpy_copy(x, torch.ones(5), 1.0, 1, False, [5], None)
    assert mod.axpy_copy.__name__ == "axpy_copy"
    h = torch.randn(100).half()
    assert torch.equal(mod.half_op(h), ((h + h).float() + 0.5).half())
    # half types are not for torch-lite: this source takes the precompiled-header build, and uses the PCH
    assert mod.__hipforge_build__["mode"] == "bridge"
    assert "not used because" not in (Path(mod.__hipforge_build__["path"]) / "build.log").read_text()


def test_own_pybind11_module_takes_the_full_torch_path(built):
    mod = built.module("pybind")
    assert mod.__hipforge_build__["mode"] == "full"
    a = torch.randn(300)
    assert torch.equal(mod.neg(a), -a)
    assert "negate" in mod.neg.__doc__


def test_rebuild_is_a_cache_hit_and_wavefronts_build_apart(built):
    src = (KERNELS / "warp64_hardcoded_hip.py").read_text().split('src = r"""', 1)[1].split('"""', 1)[0]
    paths = {}
    for w in WAVEFRONTS:
        t0 = time.perf_counter()
        mod = built.backends[w].load_inline("warp64_hardcoded", src, functions=["row_sum"])
        assert mod.__hipforge_build__["cached"] and time.perf_counter() - t0 < 5
        assert mod.__hipforge_build__["mode"] == "lite" and mod.__hipforge_build__["wavefront"] == w
        paths[w] = Path(mod.__file__).parent
    assert paths[64] != paths[32]


def test_runtime_header_standalone(tmp_path):
    """Header-only mode (no torch), both wavefronts, hand-written and ucontext fiber switches."""
    src = tmp_path / "standalone.cpp"
    src.write_text(rewrite((KERNELS / "runtime_standalone.cpp").read_text()))
    procs = []
    for w in WAVEFRONTS:
        for ctx in ("", "-DHIPCPU_USE_UCONTEXT"):
            exe = tmp_path / f"sa_{w}{ctx[2:]}"
            cmd = [
                "g++",
                "-O2",
                "-std=c++17",
                "-pthread",
                f"-I{HERE}",
                f"-DHIPCPU_WARP_SIZE={w}",
                *([ctx] if ctx else []),
                str(src),
                "-o",
                str(exe),
            ]
            procs.append((exe, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)))
    for _exe, p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    for exe, _ in procs:
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and run.stdout.strip().endswith("OK"), run.stdout + run.stderr


# ---------------------------------------------------------------------- rewrite
def test_rewrite_launches_keeps_lines_and_skips_comments_and_strings():
    src = (
        "template <int T> __global__ void __launch_bounds__(256) k(float* a) {}\n"
        "void f(float* a, hipStream_t s) {\n"
        "  k<16><<<dim3(2,\n 3), 64, 0, s>>>(a);  // k<<<1, 1>>>(a)\n"
        '  printf("<<<1, 2>>>");\n'
        "  ns::g<<<1, 2>>>();\n"
        "  (ns::k<2>)<<<1, 1>>>(a);\n"
        "}\n"
    )
    out = rewrite(src)
    assert "{ (ns::k<2>)(hipcpu_args_...); }, a)" in out
    assert out.count("\n") == src.count("\n")
    assert "__global__" not in out and "__launch_bounds__" not in out
    assert '::hip_cpu::launch("k<16>", __FILE__, __LINE__, dim3(2,\n 3),  64,  0,  s, [&]' in out
    assert "{ k<16>(hipcpu_args_...); }, a)" in out
    assert (
        '::hip_cpu::launch("ns::g", __FILE__, __LINE__, 1,  2, 0, 0, '
        "[&](auto&... hipcpu_args_) { ns::g(hipcpu_args_...); })" in out
    )
    assert "// k<<<1, 1>>>(a)" in out and 'printf("<<<1, 2>>>")' in out


def test_rewrite_shared_memory_includes_and_device_identity():
    src = (
        "#include <hip/hip_runtime.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <vector>\n"
        "namespace g { extern __shared__ __align__(16) float gs[]; }\n"
        "__global__ void k() {\n  extern __shared__ unsigned char smem[];\n  static __shared__ int c;\n"
        "  __shared__ float t[4];\n}\n"
        "void h(torch::Tensor x) { TORCH_CHECK(x.is_cuda()); auto o = x.options().device(torch::kCUDA); }\n"
    )
    out = rewrite(src)
    assert out.count("\n") == src.count("\n")
    assert "// [hipforge cpu] #include <hip/hip_runtime.h>" in out and "#include <vector>" in out
    assert "// [hipforge cpu] #include <ATen/cuda/CUDAContext.h>" in out
    assert "static ::hip_cpu::dynamic_shared_array<float> gs;" in out
    assert "unsigned char* smem = reinterpret_cast<unsigned char*>(::hip_cpu::dynamic_shared());" in out
    assert "static thread_local int c;" in out and "static thread_local float t[4];" in out
    assert "x.is_cpu()" in out and "torch::kCPU" in out


def test_mask_source_blanks_comments_and_literals_only():
    src = 'a /* x<<<y */ b // z\n"s<<<" \'c\' R"(raw<<<)" 1\'000'
    m = mask_source(src)
    assert len(m) == len(src) and "<<<" not in m and m.count("\n") == 1
    assert m.startswith("a ") and "b" in m and m.endswith("1'000")


LITE_GAP_SRC = r"""
#include <torch/extension.h>
__global__ void twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
torch::Tensor twice_cumsum(torch::Tensor x) {
    auto c = x.cumsum(0).contiguous();  // a torch API torch-lite does not declare
    auto y = torch::empty_like(c);
    const int n = c.numel();
    twice<<<(n + 255) / 256, 256>>>(c.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""


def test_torch_lite_builds_plain_sources_and_falls_back_for_the_rest(built):
    """Plain host wrappers build against torch-lite (seconds); a torch API it lacks takes the
    precompiled-header build, with the same result a torch build would give."""
    src = (KERNELS / "warp64_hardcoded_hip.py").read_text().split('src = r"""', 1)[1].split('"""', 1)[0]
    lite = built.backends[64].load_inline("warp64_hardcoded", src, functions=["row_sum"])
    assert lite.__hipforge_build__["mode"] == "lite"
    fallback = built.backends[64].load_inline("twice_cumsum", LITE_GAP_SRC, functions=["twice_cumsum"])
    assert fallback.__hipforge_build__["mode"] == "bridge"
    x = torch.randn(1000)
    assert torch.allclose(fallback.twice_cumsum(x), 2 * x.cumsum(0))
