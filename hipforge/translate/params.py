"""Code-generation choices of the offline translator: what an evolutionary optimizer mutates."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from hipforge.translate.kernels.gemm_tiles import parse as parse_tile

EPILOGUES = ("aten", "fused")
GEMM_ENGINES = ("simt", "mma")


@dataclass(frozen=True)
class GenParams:
    block_size: int = 256  # threads per block of elementwise and row kernels
    elems_per_thread: int = 1  # vectors each thread handles in the elementwise grid-stride loop
    vector_width: int = 4  # 4: float4 loads/stores on the aligned body, 1: scalar only
    unroll: int = 4  # `#pragma unroll` factor of the strided row loops
    fast_math: bool = False  # __expf/__logf intrinsics (less accurate than expf/logf)
    gemm_tile: str = "auto"  # GEMM: BMxBNxBK/TMxTN (kernels/gemm_tiles.py), auto: chosen from the task's shapes
    split_k: int = 0  # GEMM: K slices at least (more where K is long), 0: as many as fill the GPU at run time
    # elementwise work after a convolution: "aten" keeps the conv in ATen and fuses the work after it into a
    # kernel of its own; "fused" has our conv kernel apply it before its store (one launch, no extra pass)
    # wherever the planner can prove it (kernels/conv_epilogue.py). Which is faster depends on the problem.
    conv_epilogue: str = "aten"
    # the same for a GEMM (matmul, linear, bmm) and our GEMM kernel (kernels/gemm_epilogue.py)
    gemm_epilogue: str = "aten"
    # GEMM's multiply-adds: "simt" on the vector units; "mma" on matrix cores at fp32 accuracy where the
    # compiler has them (kernels/gemm_mma.py: NVIDIA's TF32 tensor cores, three products per fp32 product),
    # the simt kernel elsewhere
    gemm_engine: str = "simt"

    def __post_init__(self) -> None:
        # a multiple of 64 fills whole wavefronts on AMD and whole warps on NVIDIA
        if self.block_size % 64 or not 64 <= self.block_size <= 1024:
            raise ValueError("block_size must be a multiple of 64 in [64, 1024]")
        if self.vector_width not in (1, 4):
            raise ValueError("vector_width must be 1 or 4")
        if not 1 <= self.elems_per_thread <= 16 or not 1 <= self.unroll <= 16:
            raise ValueError("elems_per_thread and unroll must be in [1, 16]")
        if self.gemm_tile != "auto":
            parse_tile(self.gemm_tile)  # raises ValueError naming what is wrong
        if not 0 <= self.split_k <= 1024:
            raise ValueError("split_k must be in [0, 1024]")
        for name in ("conv_epilogue", "gemm_epilogue"):
            if getattr(self, name) not in EPILOGUES:
                raise ValueError(f"{name} must be one of {', '.join(EPILOGUES)}, not {getattr(self, name)!r}")
        if self.gemm_engine not in GEMM_ENGINES:
            raise ValueError(f"gemm_engine must be one of {', '.join(GEMM_ENGINES)}, not {self.gemm_engine!r}")

    def with_changes(self, **changes: Any) -> GenParams:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
