"""Generate include/hip_nvidia_names.h: the HIP -> CUDA name table of the cuda backend's shim.

The table is read from HIP's own NVIDIA mapping (`hip/nvidia_detail/nvidia_hip_runtime_api.h`, from
ROCm's hipother or the HIP package) and, for device attributes, HIP's common `hip/hip_runtime_api.h`:
- `#define hipX <cuda expression>` and `typedef ... cudaX hipY;` lines, copied;
- inline wrappers whose body only forwards its parameters to one cudaX call: `#define hipX cudaX`
  (a macro keeps CUDA's overloads, templates and default arguments);
- the `hipErrorToCudaError` and `hipDeviceGetAttribute` switches: error codes and attributes;
- HIP attribute names not in that switch, matched to the cudaDevAttr of the same suffix.
Nothing that needs the driver API (cu*, libcuda) is kept: candidates link only cudart. Every entry is
then compiled with nvcc and dropped if this CUDA does not have its target; the kept table is written.
The check is that the name exists, not that CUDA kept HIP's signature (CUDA 13 changed a few graph
and prefetch calls); tests/test_cuda_shim.py compiles the families kernels use with real arguments.

    python -m hipforge.execution.cuda.shim_gen HIP_INCLUDE_DIR [--nvcc nvcc] [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

from hipforge.execution.cuda.hip_names import Entry, alias, defines, strip_comments, switch, typedefs, wrappers

OUT = Path(__file__).resolve().parent / "include" / "hip_nvidia_names.h"
NVIDIA_HEADER = "nvidia_detail/nvidia_hip_runtime_api.h"
COMMON_HEADER = "hip_runtime_api.h"
# written by hand in hip_nvidia_shim.h: HIP's signature differs from the CUDA call it wraps
HANDWRITTEN = set(
    """hipDeviceProp_t hipGetDeviceProperties hipHostMalloc hipMemsetD32 hipMemsetD32Async hipMemsetD16
    hipMemsetD16Async hipMemsetD8 hipMemsetD8Async hipFuncSetAttribute hipDeviceAttribute_t hipError_t
    hipLaunchKernelGGL HIP_SYMBOL hipDeviceptr_t""".split()
)
# HIP names newer than the 5.x NVIDIA header, and attribute names whose CUDA suffix differs (from
# hipother's current header and HIPIFY's CUDA2HIP runtime tables); kept only when nvcc accepts them
EXTRA = {
    "hipLaunchHostFunc": "cudaLaunchHostFunc",
    "hipStreamGetPriority": "cudaStreamGetPriority",
    "hipStreamGetFlags": "cudaStreamGetFlags",
    "hipEventRecordWithFlags": "cudaEventRecordWithFlags",
    "hipMemcpyPeer": "cudaMemcpyPeer",
    "hipMemcpyPeerAsync": "cudaMemcpyPeerAsync",
    "hipMemPrefetchAsync": "cudaMemPrefetchAsync",
    "hipGetFuncBySymbol": "cudaGetFuncBySymbol",
    "hipErrorUnknown": "cudaErrorUnknown",
    "hipErrorInvalidResourceHandle": "cudaErrorInvalidResourceHandle",
    "hipErrorMemoryAllocation": "cudaErrorMemoryAllocation",
    "hipErrorInitializationError": "cudaErrorInitializationError",
    "hipErrorInvalidContext": "cudaErrorDeviceUninitialized",
    "hipErrorFileNotFound": "cudaErrorFileNotFound",
    "hipDeviceAttributeSharedMemPerBlockOptin": "cudaDevAttrMaxSharedMemoryPerBlockOptin",
    "hipDeviceAttributeSharedMemPerMultiprocessor": "cudaDevAttrMaxSharedMemoryPerMultiprocessor",
    "hipDeviceAttributeMaxBlocksPerMultiProcessor": "cudaDevAttrMaxBlocksPerMultiprocessor",
    "hipDeviceAttributeMaxRegistersPerMultiprocessor": "cudaDevAttrMaxRegistersPerMultiprocessor",
    "hipDeviceAttributePersistingL2CacheMaxSize": "cudaDevAttrMaxPersistingL2CacheSize",
    "hipDeviceAttributeAccessPolicyMaxWindowSize": "cudaDevAttrMaxAccessPolicyWindowSize",
    "hipDeviceAttributeReservedSharedMemPerBlock": "cudaDevAttrReservedSharedMemoryPerBlock",
    "hipDeviceAttributePciDomainID": "cudaDevAttrPciDomainId",
    "hipDeviceAttributeDeviceOverlap": "cudaDevAttrGpuOverlap",
}
EXTRA_CONSTANTS = {
    "hipLimitStackSize": "cudaLimitStackSize",
    "hipHostRegisterReadOnly": "cudaHostRegisterReadOnly",
    "hipMemcpyDeviceToDeviceNoCU": "cudaMemcpyDeviceToDevice",
}


def table(hip_include: Path) -> list[Entry]:
    nvidia = strip_comments((hip_include / NVIDIA_HEADER).read_text())
    common = strip_comments((hip_include / COMMON_HEADER).read_text())
    entries = typedefs(nvidia) + defines(nvidia) + wrappers(nvidia)
    entries += [alias(h, c, "error codes") for h, c in switch(nvidia, "hipErrorToCudaError(", r"hip\w+", r"cuda\w+")]
    attrs = dict(switch(nvidia, "hipDeviceGetAttribute(", r"hipDeviceAttribute\w+", r"cudaDevAttr\w+"))
    for name in sorted(set(re.findall(r"\b(hipDeviceAttribute\w+)\s*[,=]", common)) - set(attrs)):
        attrs[name] = EXTRA.get(name, "cudaDevAttr" + name.removeprefix("hipDeviceAttribute"))
    entries += [alias(h, c, "device attributes") for h, c in attrs.items()]
    for h, c in EXTRA.items():
        if not h.startswith("hipDeviceAttr"):
            entries.append(alias(h, c, "error codes" if h.startswith("hipError") else "runtime API"))
    entries += [alias(h, c, "constants and flags") for h, c in EXTRA_CONSTANTS.items()]
    seen: set[str] = set()
    unique = []
    for e in entries:
        if e.hip not in seen and e.hip not in HANDWRITTEN:
            seen.add(e.hip)
            unique.append(e)
    return unique


def _errors(entries: list[Entry], nvcc: str, std: str) -> set[str]:
    """The entries whose line (or probe line) nvcc rejects."""
    lines = ["#include <cuda_runtime.h>", "#include <cuda_fp16.h>", "#include <cuda_bf16.h>"]
    owner: dict[int, str] = {}
    for e in entries:
        lines.append(e.line)
        owner[len(lines)] = e.hip
    for e in entries:
        for line in (e.probe or "").splitlines():
            lines.append(line)
            owner[len(lines)] = e.hip
    with tempfile.TemporaryDirectory(prefix="hipforge-shim-gen-") as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text("\n".join(lines) + "\n")
        proc = subprocess.run(
            [nvcc, "-x", "cu", f"-std={std}", "-arch=sm_90", "-c", str(src), "-o", str(Path(tmp) / "p.o")],
            capture_output=True,
            text=True,
        )
    bad = {owner[int(n)] for n in re.findall(r"probe\.cu\((\d+)\): error", proc.stderr) if int(n) in owner}
    if proc.returncode != 0 and not bad:
        raise RuntimeError(f"nvcc rejected the probe outside any entry:\n{proc.stderr[-3000:]}")
    return bad


def validated(entries: list[Entry], nvcc: str = "nvcc", std: str = "c++20") -> list[Entry]:
    """Drop entries until nvcc compiles all the rest (it stops reporting after many errors: repeat)."""
    for _ in range(20):
        bad = _errors(entries, nvcc, std)
        if not bad:
            return entries
        entries = [e for e in entries if e.hip not in bad]
    raise RuntimeError("the name table did not converge")


def render(entries: list[Entry], sources: dict[str, str], cuda: str) -> str:
    head = [
        "// GENERATED by hipforge/execution/cuda/shim_gen.py: do not edit. HIP names -> CUDA names,",
        "// read from HIP's NVIDIA mapping and kept where nvcc accepts them. Sources (sha256/16):",
        *[f"//   {name}: {digest}" for name, digest in sources.items()],
        f"// checked against: {cuda}",
        "#pragma once",
    ]
    body = []
    for section in ("types", "constants and flags", "error codes", "device attributes", "runtime API"):
        lines = sorted(e.line for e in entries if e.section == section)
        body += [f"// {section} ({len(lines)})", *lines]
    return "\n".join(head + body) + "\n"


def nvcc_version(nvcc: str = "nvcc") -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def generate(hip_include: Path, nvcc: str = "nvcc") -> tuple[str, int, int]:
    """(the header's text, names kept, names read)."""
    for rel in (NVIDIA_HEADER, COMMON_HEADER):
        if not (hip_include / rel).is_file():
            raise FileNotFoundError(f"{hip_include} has no {rel}")
    entries = table(hip_include)
    kept = validated(entries, nvcc)
    digest = {
        rel: hashlib.sha256((hip_include / rel).read_bytes()).hexdigest()[:16] for rel in (NVIDIA_HEADER, COMMON_HEADER)
    }
    return render(kept, digest, nvcc_version(nvcc)), len(kept), len(entries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hip_include", type=Path, help="the directory of HIP's headers (hip_runtime_api.h, nvidia_detail/)")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    try:
        text, kept, read = generate(args.hip_include, args.nvcc)
    except FileNotFoundError as exc:
        ap.error(str(exc))
    args.out.write_text(text)
    print(f"{kept} of {read} names kept -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
