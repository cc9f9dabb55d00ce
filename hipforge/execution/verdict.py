"""What an evaluation concluded, in a form that survives JSON (the warehouse stores it as is)."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    INCORRECT = "incorrect"
    HACKED = "hacked"
    CORRECT = "correct"


REVIEW_SPEEDUP = 10.0  # faster than this over eager is more often a hack than a kernel: a human looks


@dataclass
class Timing:
    """Runtimes of one callable in milliseconds; outliers (beyond Q3 + 3 IQR) are left out of mean/std."""

    median_ms: float
    min_ms: float
    max_ms: float
    std_ms: float
    trials: int
    outliers_dropped: int = 0

    @classmethod
    def from_samples(cls, samples_ms: list[float]) -> Timing:
        ordered = sorted(samples_ms)
        q1, _, q3 = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else (ordered[0],) * 3
        kept = [s for s in ordered if s <= q3 + 3 * (q3 - q1)]
        std = statistics.stdev(kept) if len(kept) > 1 else 0.0
        return cls(statistics.median(ordered), ordered[0], ordered[-1], std, len(ordered),
                   len(ordered) - len(kept))

    def typical_ms(self, backend: str) -> float:
        """The time a backend's speedups and comparisons use. On the cpu backend (fibers on shared cores) a
        trial the scheduler preempts costs a whole time slice (a 0.011 ms forward was timed at 8 ms under load,
        a 1,015x "speedup" over it), and preemption only adds: the fastest trial is the closest to the cost.
        GPUs keep KernelBench's median."""
        return self.min_ms if backend == "cpu" else self.median_ms


@dataclass
class EvalResult:
    verdict: Verdict
    message: str = ""
    backend: str = ""
    arch: str = ""
    protocol: str = ""  # hipforge.execution.protocol's key: the evaluator's code and settings it ran under
    reused_from: str = ""  # the stored evaluation this result repeats (a re-run after a killed one)
    phase: str = ""  # where the evaluation stopped: static, gate, compile, check, time, done
    isolation: list[str] = field(default_factory=list)  # the mechanisms that were in force
    compile_log: str = ""
    gate_log: str | None = None  # None: no gate ran
    gate_ok: bool | None = None
    failing_seed: int | None = None
    seeds: list[int] = field(default_factory=list)
    seed_results: dict[str, bool] = field(default_factory=dict)  # seed -> passed
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    atol: float | None = None
    rtol: float | None = None
    passes_loose: bool | None = None  # fp32 only: would it pass KernelBench v0's 1e-2?
    reference_fp64_gap: float | None = None  # incorrect fp32 only: the reference's own distance from fp64
    hack_check: str | None = None
    integrity: dict[str, Any] = field(default_factory=dict)  # which trials were checked, and how
    runtime: Timing | None = None  # the candidate
    ref_eager: Timing | None = None
    ref_compiled: Timing | None = None  # the reference under torch.compile
    speedup_eager: float | None = None
    speedup_compiled: float | None = None
    trials: int = 0  # correctness trials (one per seed)
    timed_trials: int = 0
    flagged_for_review: bool = False
    output_tail: str = ""  # the last of what the candidate printed
    traceback: str = ""  # of a runtime error inside the candidate
    seconds: float = 0.0

    def finish_speedups(self, backend: str) -> None:
        if self.runtime and (runtime := self.runtime.typical_ms(backend)) > 0:
            if self.ref_eager:
                self.speedup_eager = self.ref_eager.typical_ms(backend) / runtime
            if self.ref_compiled:
                self.speedup_compiled = self.ref_compiled.typical_ms(backend) / runtime
        self.flagged_for_review = (self.speedup_eager or 0.0) > REVIEW_SPEEDUP

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["verdict"] = Verdict(kwargs["verdict"])
        for key in ("runtime", "ref_eager", "ref_compiled"):
            if isinstance(kwargs.get(key), dict):
                kwargs[key] = Timing(**kwargs[key])
        return cls(**kwargs)


class Concluded(Exception):
    """Raised wherever the evidence already decides the verdict; the evaluation stops there."""

    def __init__(self, result: EvalResult) -> None:
        super().__init__(result.message)
        self.result = result


def conclude(verdict: Verdict, message: str, **fields: Any) -> Concluded:
    return Concluded(EvalResult(verdict, message, **fields))
