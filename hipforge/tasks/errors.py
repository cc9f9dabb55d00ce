"""Why a task was rejected: one machine-readable code plus a message a human can act on."""

from __future__ import annotations

from typing import Literal, get_args

ErrorCode = Literal[
    "syntax_error",
    "missing_model",
    "missing_get_inputs",
    "missing_get_init_inputs",
    "banned_construct",
    "init_error",
    "inputs_error",
    "forward_error",
    "non_tensor_output",
    "non_finite_output",
    "non_deterministic",
    "too_slow",
    "too_much_memory",
    "crashed",
]
ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))


class TaskError(Exception):
    """A task that cannot enter the pipeline; ``str(err)`` is ``"<code>: <message>"``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown task error code {code!r}")
        super().__init__(code, message)
        self.code: ErrorCode = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __reduce__(self) -> tuple[type[TaskError], tuple[str, str]]:
        # Keeps the error picklable across process boundaries (Dagster, multiprocessing).
        return (TaskError, (self.code, self.message))
