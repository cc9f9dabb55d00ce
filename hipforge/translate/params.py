"""Code-generation choices of the offline translator: what an evolutionary optimizer mutates."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class GenParams:
    block_size: int = 256  # threads per block of elementwise and row kernels
    elems_per_thread: int = 1  # vectors each thread handles in the elementwise grid-stride loop
    vector_width: int = 4  # 4: float4 loads/stores on the aligned body, 1: scalar only
    unroll: int = 4  # `#pragma unroll` factor of the strided row loops
    fast_math: bool = False  # __expf/__logf intrinsics (less accurate than expf/logf)
    tile: int = 32  # GEMM: square shared-memory tile of C (and of A, B along K)
    thread_tile: int = 2  # GEMM: each thread computes thread_tile x thread_tile outputs

    def __post_init__(self) -> None:
        # a multiple of 64 fills whole wavefronts on AMD and whole warps on NVIDIA
        if self.block_size % 64 or not 64 <= self.block_size <= 1024:
            raise ValueError("block_size must be a multiple of 64 in [64, 1024]")
        if self.vector_width not in (1, 4):
            raise ValueError("vector_width must be 1 or 4")
        if not 1 <= self.elems_per_thread <= 16 or not 1 <= self.unroll <= 16:
            raise ValueError("elems_per_thread and unroll must be in [1, 16]")
        if self.tile not in (8, 16, 32, 64) or self.thread_tile not in (1, 2, 4) or self.tile % self.thread_tile:
            raise ValueError("tile must be 8, 16, 32 or 64 and a multiple of thread_tile (1, 2 or 4)")
        if (self.tile // self.thread_tile) ** 2 > 1024:
            raise ValueError("a GEMM block would exceed 1024 threads")

    def with_changes(self, **changes: Any) -> GenParams:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
