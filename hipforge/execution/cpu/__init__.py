"""The cpu backend: HIP kernels compiled with g++ and run on CPU fibers (hip_cpu_runtime.h)."""

from hipforge.execution.cpu.backend import CpuBackend

__all__ = ["CpuBackend"]
