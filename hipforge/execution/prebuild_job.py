"""The candidate's module imported once before its evaluation holds any device memory, only so that the
builds it asks for are made (on a loaded GPU machine, minutes of nvcc) while it holds none: the candidate's
own job then loads them from the read-only cache, and a task too big to share the device waits for the
device in seconds, not for other candidates' builds.

Untrusted like the candidate's job, and in the same sandbox. No ModelNew and no device here; the only
verdict it can give is a build that fails (made by the parent in a build job, not here). Anything else the
import does is judged where it counts: the candidate's own job imports the module again under every check.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hipforge.execution.backend import CompileError, make_backend
from hipforge.execution.build_requests import BuildRequests
from hipforge.execution.config import EvalConfig


def run(job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
    import torch.utils.cpp_extension

    backend = make_backend(EvalConfig.from_dict(job["config"]))
    requests = BuildRequests(channel)

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        return requests.load(backend, args, kwargs)

    torch.utils.cpp_extension.load_inline = load_inline
    path = Path.cwd() / "candidate.py"
    path.write_text(job["candidate_source"])
    try:
        spec = importlib.util.spec_from_file_location("candidate", path)
        assert spec and spec.loader
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except CompileError as e:
        channel.emit({"event": "failed", "verdict": "compile_error", "message": str(e), "compile_log": e.log})
        return
    except BaseException:  # noqa: BLE001, S110  # judged in the candidate's own job, which imports it again
        pass
    channel.emit({"event": "imported", "builds": requests.names})
