"""The rocm backend: ROCm torch + hipcc on AMD GPUs (gfx950 by default), see backend.py."""

from hipforge.execution.rocm.backend import KNOWN_ARCHS, RocmBackend, RocmSettings, require_rocm_torch

__all__ = ["KNOWN_ARCHS", "RocmBackend", "RocmSettings", "require_rocm_torch"]
