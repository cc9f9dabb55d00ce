"""Warehouse rows for a candidate and its verdict: the kernel's content address and the evaluation row."""

from __future__ import annotations

import hashlib
import uuid

from hipforge.execution.verdict import EvalResult


def kernel_id(candidate_source: str) -> str:
    """Content address of a candidate: the same source is the same kernel, whoever wrote it."""
    return hashlib.sha256(candidate_source.encode()).hexdigest()[:16]


def evaluation_row(kid: str, task_id: str, result: EvalResult) -> dict[str, object]:
    return {
        "eval_id": uuid.uuid4().hex[:16],
        "kernel_id": kid,
        "task_id": task_id,
        "backend": result.backend,
        "arch": result.arch,
        "protocol": result.protocol or None,
        "verdict": result.verdict.value,
        "message": result.message,
        "hack_check": result.hack_check,
        "failing_seed": result.failing_seed,
        "max_abs_err": result.max_abs_error,
        "max_rel_err": result.max_rel_error,
        "runtime_ms": result.runtime.typical_ms(result.backend) if result.runtime else None,
        "eager_ms": result.ref_eager.typical_ms(result.backend) if result.ref_eager else None,
        "compiled_ms": result.ref_compiled.typical_ms(result.backend) if result.ref_compiled else None,
        "speedup_eager": result.speedup_eager,
        "speedup_compiled": result.speedup_compiled,
        "detail": result.to_dict(),
    }
