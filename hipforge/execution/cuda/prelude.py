"""What a candidate's translation unit is compiled with when it must stay cheap.

Compile time is set by what a TU includes: through nvcc, ATen/core/Tensor.h alone costs ~16 s and
<torch/extension.h> ~50 s, bare device code ~1-2 s. So a candidate is compiled against torch-lite
(`torchlite/hipforge_torchlite.h`: declarations of the slice of torch its host wrapper uses, calls
going out of line to a runtime built once), plus only the std headers its source names — torch's
headers would have dragged those in, and candidates rely on that. The same headers let clang-22 parse
host wrappers in the gfx950 gate (`hipforge.execution.gate`), where CPU torch cannot build in HIP mode.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SHIM_INCLUDE = PACKAGE_DIR / "include"  # hip/hip_runtime.h and friends -> hip_nvidia_shim.h
LITE_DIR = PACKAGE_DIR / "torchlite"  # hipforge_torchlite*.h, rt.cpp
CANDIDATE_FILE = "candidate.hip"  # the name compiler messages give the candidate's own lines

# torch header names a candidate may include; each becomes a one-line stub that includes torch-lite
STUBS = """torch/extension.h torch/torch.h torch/all.h torch/types.h ATen/ATen.h ATen/Tensor.h
ATen/core/Tensor.h ATen/Functions.h ATen/Dispatch.h ATen/TensorUtils.h ATen/cuda/CUDAContext.h
ATen/cuda/CUDAContextLight.h ATen/cuda/Exceptions.h ATen/hip/HIPContext.h ATen/hip/HIPContextLight.h
ATen/hip/Exceptions.h ATen/hip/impl/HIPGuardImplMasqueradingAsCUDA.h
ATen/hip/impl/HIPStreamMasqueradingAsCUDA.h c10/cuda/CUDAGuard.h c10/cuda/CUDAStream.h
c10/cuda/CUDAException.h c10/hip/HIPGuard.h c10/hip/HIPStream.h c10/hip/HIPException.h
c10/core/ScalarType.h c10/core/TensorOptions.h c10/core/Device.h""".split()

_STD = {
    "algorithm": "min max sort stable_sort fill fill_n copy copy_n clamp min_element max_element transform "
    "reverse find find_if count count_if any_of all_of none_of for_each minmax lower_bound upper_bound",
    "cmath": "sqrt exp log pow abs fabs ceil floor tanh erf isnan isinf isfinite fmax fmin round sin cos "
    "exp2 log2 log1p expm1 fma trunc hypot signbit",
    "iostream": "cout cerr clog endl",
    "sstream": "stringstream ostringstream istringstream",
    "string": "string to_string stoi stol stof",
    "vector": "vector",
    "array": "array",
    "tuple": "tuple make_tuple tie get apply tuple_size forward_as_tuple",
    "optional": "optional nullopt make_optional",
    "memory": "unique_ptr shared_ptr make_unique make_shared",
    "functional": "function plus multiplies hash",
    "map": "map",
    "unordered_map": "unordered_map",
    "set": "set",
    "unordered_set": "unordered_set",
    "numeric": "accumulate iota inner_product partial_sum reduce gcd lcm",
    "limits": "numeric_limits",
    "stdexcept": "runtime_error invalid_argument logic_error out_of_range domain_error exception",
    "utility": "pair make_pair move forward swap exchange integer_sequence make_index_sequence",
    "type_traits": "is_same is_same_v enable_if enable_if_t conditional conditional_t is_floating_point "
    "is_floating_point_v is_integral is_integral_v decay_t remove_cv_t",
    "cstdint": "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t",
    "cstddef": "size_t ptrdiff_t",
    "cstring": "memcpy memset strlen strcmp",
    "cstdio": "printf snprintf fprintf sprintf",
    "cstdlib": "exit abort",
    "chrono": "chrono",
    "mutex": "mutex lock_guard",
    "random": "mt19937 random_device uniform_real_distribution normal_distribution",
    "complex": "complex",
}
_STD_OF = {name: header for header, names in _STD.items() for name in names.split()}
_C_NAMES = {
    "cfloat": r"\b(?:FLT|DBL)_(?:MAX|MIN|EPSILON)\b",
    "cmath": r"\b(?:INFINITY|NAN|HUGE_VALF?)\b",
    "cassert": r"\bassert\s*\(",
    "climits": r"\b(?:INT|UINT|LONG|LLONG)_(?:MAX|MIN)\b",
    "cstdio": r"\b(?:f|sn|s)?printf\s*\(|\bputs\s*\(|\bstd(?:err|out)\b",
}
# half types, or a CUDA header that includes cuda_fp16.h (mma.h): it must come before the shim's names
_HALF = re.compile(r"half|fp16|bf16|bfloat16|<mma\.h>", re.I)


def std_headers(source: str) -> list[str]:
    """The std headers a source names (all of them when it says `using namespace std` or names
    something this table does not know): torch/extension.h would have included them."""
    names = set(re.findall(r"\bstd::(\w+)", source))
    if re.search(r"\busing\s+namespace\s+std\b", source) or any(n not in _STD_OF for n in names):
        wanted = set(_STD)
    else:
        wanted = {_STD_OF[n] for n in names}
    wanted |= {h for h, pattern in _C_NAMES.items() if re.search(pattern, source)}
    return sorted(wanted)


def needs_half(source: str) -> bool:
    return bool(_HALF.search(source))


def materialize(kind: str, files: dict[str, str]) -> Path:
    """A directory of generated headers under the temp dir, made once per content (atomic rename)."""
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    root = Path(tempfile.gettempdir()) / f"hipforge-{kind}-{digest}-{os.getuid()}"
    if root.is_dir():
        return root
    tmp = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=root.parent))
    for name, body in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(body)
    try:
        os.rename(tmp, root)
    except OSError:  # another process made it first
        pass
    return root


def stub_include_dir() -> Path:
    """One-line torch header stubs (`#include <hipforge_torchlite.h>`) for lite builds and the gate."""
    return materialize(
        "torchlite-stubs", {n: "#pragma once\n#include <hipforge_torchlite.h>\n" for n in STUBS}
    )


# full mode compiles against the real (CUDA) torch: ROCm torch's HIP header names map onto it
_HIP_TORCH_COMPAT = """#pragma once
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
namespace c10::hip {
using HIPStream = c10::cuda::CUDAStream;
using HIPStreamMasqueradingAsCUDA = c10::cuda::CUDAStream;
using HIPGuard = c10::cuda::CUDAGuard;
using OptionalHIPGuard = c10::cuda::OptionalCUDAGuard;
using HIPGuardMasqueradingAsCUDA = c10::cuda::CUDAGuard;
using OptionalHIPGuardMasqueradingAsCUDA = c10::cuda::OptionalCUDAGuard;
inline HIPStream getCurrentHIPStream(c10::DeviceIndex d = -1) { return c10::cuda::getCurrentCUDAStream(d); }
inline HIPStream getCurrentHIPStreamMasqueradingAsCUDA(c10::DeviceIndex d = -1) {
  return c10::cuda::getCurrentCUDAStream(d);
}
}  // namespace c10::hip
namespace at::hip { using namespace c10::hip; }
#ifndef C10_HIP_KERNEL_LAUNCH_CHECK
#define C10_HIP_KERNEL_LAUNCH_CHECK() C10_CUDA_KERNEL_LAUNCH_CHECK()
#define C10_HIP_CHECK(x) C10_CUDA_CHECK(x)
#endif
"""
HIP_TORCH_HEADERS = """ATen/hip/HIPContext.h ATen/hip/HIPContextLight.h ATen/hip/Exceptions.h
ATen/hip/impl/HIPGuardImplMasqueradingAsCUDA.h ATen/hip/impl/HIPStreamMasqueradingAsCUDA.h c10/hip/HIPGuard.h
c10/hip/HIPStream.h c10/hip/HIPException.h""".split()


def full_compat_include_dir() -> Path:
    return materialize("hip-torch-compat", {n: _HIP_TORCH_COMPAT for n in HIP_TORCH_HEADERS})


def torch_include_dir() -> Path | None:
    """torch's own headers (c10/util/Half.h when a source uses half types); never imports torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "include"
    return path if path.is_dir() else None


def lite_include_dirs(shim: bool) -> list[Path]:
    """Search path order: the HIP shim (cuda backend only), torch-lite's stubs and headers, torch."""
    dirs = [SHIM_INCLUDE] if shim else []
    dirs += [stub_include_dir(), LITE_DIR]
    torch_dir = torch_include_dir()
    return dirs + ([torch_dir] if torch_dir else [])


def lite_prelude(source: str) -> str:
    lines = ["#define HF_LITE_PRELUDE 1"]
    half = needs_half(source)
    if half:
        lines.append("#define HF_SHIM_FP16 1")
    lines.append("#include <hip/hip_runtime.h>")
    if half:
        lines += [
            "#include <c10/util/Half.h>",
            "#include <c10/util/BFloat16.h>",
            "#define HF_WITH_C10_HALF 1",
        ]
    headers = std_headers(source)
    if "tuple" in headers or re.search(r"\btuple\s*<", source):
        headers = sorted(set(headers) | {"tuple"})
        lines.append("#define HF_WITH_TUPLE 1")
    lines += [f"#include <{h}>" for h in headers]
    lines.append("#include <hipforge_torchlite.h>")
    return "\n".join(lines) + "\n"


def lite_translation_unit(source: str, functions: list[str]) -> str:
    """prelude + the candidate (its own line numbers, file candidate.hip) + one trampoline per function."""
    exports = "".join(f"HF_EXPORT({f})\n" for f in functions)
    return (
        f'{lite_prelude(source)}#line 1 "{CANDIDATE_FILE}"\n{source}\n#line 1 "hipforge_exports"\n{exports}'
    )
