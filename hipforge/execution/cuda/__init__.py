"""HIP on NVIDIA: the cuda backend (nvcc + a HIP shim + torch-lite headers), see backend.py."""

from hipforge.execution.cuda.backend import CudaBackend

__all__ = ["CudaBackend"]
