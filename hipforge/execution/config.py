"""How one evaluation runs: backend, seeds, tolerances, timing protocol and sandbox limits.

Defaults are KernelBench's (eval.py, timing.py): ≥5 correctness trials each with its own seed,
atol = rtol = 1e-4 for fp32 and 1e-2 for fp16/bf16, 3 warm-ups, 100 timed trials, L2 flushed
with a 256 MB write before each GPU trial. KernelBench v0 used 1e-2 for fp32 too: we report both.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MIN_SEEDS = 5

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float64": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
}
LOOSE_FP32 = (1e-2, 1e-2)


def default_cache_dir() -> str:
    """Sandboxed builds need a cache the unprivileged sandbox user can reach (not under a 0700 $HOME)."""
    return os.environ.get("HIPFORGE_SANDBOX_CACHE", str(Path(tempfile.gettempdir()) / "hipforge-compile"))


# (warm-ups, timed trials) per measurement. GPUs: KernelBench's protocol. The cpu backend runs HIP on
# fibers: its times only rank candidates against each other, and 100 trials of an emulated kernel cost
# seconds per evaluation.
GPU_BACKENDS = ("cuda", "rocm")
TIMING = {"gpu": (3, 100), "cpu": (1, 10)}


@dataclass
class EvalConfig:
    backend: str = "cpu"  # cpu | cuda | rocm | "package.module:Factory" for a custom backend
    arch: str = "gfx950"  # rocm's --offload-arch and the gate's; "sm_90"-style picks the cuda build
    wavefront: int = 64  # the cpu backend's warp size (32 mimics NVIDIA)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)  # one correctness trial per seed, fresh inputs each
    init_seed: int = 42  # seeds Model/ModelNew construction, so both start from the same weights
    tolerances: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    warmup: int | None = None  # None: the backend's protocol (TIMING)
    timed_trials: int | None = None
    flush_l2_mb: int = 256  # GPU only
    time_compiled_ref: bool | None = None  # None: only on GPU (inductor on CPU costs a C++ build)
    whole_output_limit: int = 1 << 25  # elements; a larger output's full checks compare fine sums (checksum.py)
    timed_full_checks: int = 2  # timed trials (drawn at random) whose outputs are compared whole, besides checksums
    # forwards per timed trial: the parent picks R so R x the forward's wall reaches this (None: the backend's,
    # hipforge.execution.wallclock.TARGET_MS), with R sets of inputs and outputs under reps_memory_mb
    reps_target_ms: float | None = None
    reps_memory_mb: int = 512
    adversarial: bool = True  # trials on inputs that expose precision downgrades, where the reference allows
    second_size: bool = True  # trials at a second size of the task (hipforge.tasks.resize)
    gate: bool = True  # run the gfx950 compile gate when it is installed
    static_checks: bool = True
    # import the candidate once before device memory is held, so its builds do not hold it (None: on GPUs)
    prebuild: bool | None = None
    compile_timeout_s: float = 600.0  # import of the candidate, its load_inline builds, ModelNew(...)
    run_timeout_s: float = 300.0  # every trial (correctness, adversarial, second size, timed) and the timings
    memory_limit_mb: int = 8192  # the candidate's own budget, on top of what the task's reference itself takes
    reference_memory_limit_mb: int = 65536  # the reference's process (the task's own needs: weights, inputs)
    max_file_mb: int = 2048  # RLIMIT_FSIZE; a precompiled torch header alone is ~800 MB
    tmp_size_mb: int = 2048  # the private tmpfs the candidate runs in
    max_processes: int = 512  # RLIMIT_NPROC of the sandbox user (threads count too), shared by all slots
    isolation: str = "auto"  # auto: namespaces when root and unshare works, else rlimits + audit hooks
    # root only: jobs drop to this uid. Slots share it (and so RLIMIT_NPROC's count) because the build
    # cache makes its entries 0700; each slot's PID namespace keeps its kill-everything-of-uid local
    sandbox_uid: int = 64000
    cache_dir: str = field(default_factory=default_cache_dir)

    def __post_init__(self) -> None:
        default_warmup, default_trials = TIMING["cpu" if self.backend == "cpu" else "gpu"]
        self.warmup = default_warmup if self.warmup is None else self.warmup
        self.timed_trials = default_trials if self.timed_trials is None else self.timed_trials
        self.seeds = tuple(self.seeds)
        if len(set(self.seeds)) < MIN_SEEDS:
            raise ValueError(f"need at least {MIN_SEEDS} distinct seeds, got {self.seeds}")
        if self.timed_trials < 1 or self.warmup < 0:
            raise ValueError("timed_trials must be >= 1 and warmup >= 0")
        if self.wavefront not in (32, 64):
            raise ValueError("wavefront must be 32 or 64")
        self.tolerances = {k: (float(a), float(r)) for k, (a, r) in self.tolerances.items()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        """(atol, rtol) for an output dtype ("float32", "torch.float16", ...); fp32's for unknown floats."""
        name = dtype.removeprefix("torch.")
        return self.tolerances.get(name, self.tolerances.get("float32", DEFAULT_TOLERANCES["float32"]))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalConfig:
        return cls(**data)
