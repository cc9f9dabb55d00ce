"""The MI350X executor as a Dagster resource: which backend judges candidates, and how strictly."""

from collections.abc import Iterable, Iterator

import dagster as dg
from pydantic import Field

from hipforge.execution.config import DEFAULT_TOLERANCES, EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.execution.pool import POOLS, shared_pool
from hipforge.execution.pool.base import EvalPool
from hipforge.execution.verdict import EvalResult


class ExecutorResource(dg.ConfigurableResource):
    """Sandboxed compile, multi-seed correctness and timing of HIP candidates.

    rocm on MI350X (gfx950) in production, cuda on NVIDIA, cpu (HIP-on-CPU) for the embedded default.
    """

    backend: str = Field(default="cpu", description="rocm | cuda | cpu")
    arch: str = Field(default="gfx950", description="rocm: gfx950 (MI350X) or gfx942 (MI300X); cuda: sm_90 ...")
    wavefront: int = Field(default=64, description="cpu backend warp size: 64 (AMD) or 32 (NVIDIA)")
    seeds: int = Field(default=5, description="correctness trials, each with fresh inputs from its own seed")
    fp32_tolerance: float = Field(default=1e-4, description="atol = rtol for fp32 outputs (KernelBench: 1e-4)")
    half_tolerance: float = Field(default=1e-2, description="atol = rtol for fp16/bf16 outputs")
    timed_trials: int = Field(default=0, description="timed runs per measurement; 0: the backend's protocol "
                                                    "(GPUs: KernelBench's 100 after 3 warm-ups; cpu: 10 after 1)")
    compile_timeout_s: float = Field(default=600.0)
    run_timeout_s: float = Field(default=120.0)
    memory_limit_mb: int = Field(default=8192)
    workers: int = Field(default=0, description="evaluations in flight per device (builds overlap, timing is "
                                                "serialized per device); 0: local: the cores split over the "
                                                "devices, ray: 4")
    pool: str = Field(default="local", description="local: one warm worker per visible GPU on this machine; "
                                                   "ray: Ray tasks on the cluster at ray_address")
    ray_address: str = Field(default="", description="pool=ray: a Ray cluster (ray://head:10001, auto); "
                                                     "empty starts a local Ray")
    gate: bool = Field(default=True, description="also compile each candidate's device code for gfx950 (clang-22)")

    def eval_config(self) -> EvalConfig:
        tolerances = dict(DEFAULT_TOLERANCES)
        tolerances.update({k: (self.fp32_tolerance,) * 2 for k in ("float32", "float64")})
        tolerances.update({k: (self.half_tolerance,) * 2 for k in ("float16", "bfloat16")})
        return EvalConfig(
            backend=self.backend, arch=self.arch, wavefront=self.wavefront, seeds=tuple(range(self.seeds)),
            tolerances=tolerances, timed_trials=self.timed_trials or None, compile_timeout_s=self.compile_timeout_s,
            run_timeout_s=self.run_timeout_s, memory_limit_mb=self.memory_limit_mb, gate=self.gate,
        )

    def evaluate(self, candidate_source: str, task_source: str) -> EvalResult:
        return evaluate(candidate_source, task_source, self.eval_config())

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        return self.shared_pool().evaluate_many(items)

    def shared_pool(self) -> EvalPool:
        """The configured pool (local or ray), kept warm for the life of the process."""
        if self.pool not in POOLS:
            raise ValueError(f"executor pool must be one of {', '.join(POOLS)}, not {self.pool!r}")
        return shared_pool(self.pool, self.eval_config(), slots=self.workers or None, ray_address=self.ray_address)
