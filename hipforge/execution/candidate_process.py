"""The candidate's process set up to build ModelNew: the guard armed around candidate code, its device, the
forward clock bound before the candidate exists, the tasks with their tripwires, and the candidate imported
(each build it asks for made by the parent in a job that runs no candidate code, then loaded here).
candidate_job.Harness runs the trials on it."""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from hipforge.execution import antihack_dynamic as dyn
from hipforge.execution.antihack_extensions import Extensions
from hipforge.execution.antihack_guard import Guard, tripwire
from hipforge.execution.backend import CompileError, make_backend
from hipforge.execution.build_requests import BuildRequests, build_name
from hipforge.execution.config import EvalConfig
from hipforge.execution.cpu import workers
from hipforge.execution.forward_clock import ForwardClock
from hipforge.execution.job_common import build_reference, load_task, setup_device


class Failed(Exception):
    def __init__(self, verdict: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.verdict, self.message, self.fields = verdict, message, fields


class CandidateProcess:
    def __init__(self, job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
        self.cfg, self.job, self.channel = EvalConfig.from_dict(job["config"]), job, channel
        self.mechanisms = [*mechanisms, "audit-hook"]
        self.out = Path(job["outdir"])
        self.path = os.path.join(os.getcwd(), "candidate.py")
        with open(self.path, "w") as f:
            f.write(job["candidate_source"])
        self.guard = Guard(os.getcwd(), self.path)
        self.guard.install()
        self.backend = make_backend(self.cfg)
        self.device = self.backend.torch_device
        setup_device(self.device, float(job.get("device_memory_mb", 0)))
        self.clock = ForwardClock(self.device, self.cfg.flush_l2_mb)  # bound before the candidate exists
        self.tasks = [load_task(src, f"hipforge_task_{i}") for i, src in enumerate(job["task_sources"])]
        for task in self.tasks:
            tripwire(task.Model, self.guard)
        self.exts, self.builds, self.requests = Extensions(), [], BuildRequests(channel)
        self.models: dict[int, Any] = {}

    # -- building ----------------------------------------------------------------------------
    def op_import(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch.utils.cpp_extension

        torch.utils.cpp_extension.load_inline = self.load_inline
        self.before, self.env = dyn.snapshot(), dict(os.environ)
        try:
            with self.guard.armed():
                spec = importlib.util.spec_from_file_location("candidate", self.path)
                assert spec and spec.loader
                sys.modules["candidate"] = module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                self.model(0)
        except CompileError as e:
            raise Failed("compile_error", str(e), compile_log=e.log) from None
        except BaseException as e:
            raise self.failure(e, "building ModelNew") from None
        return {"event": "ready", "compile_log": "\n".join(self.builds)}

    def load_inline(self, *args: Any, **kwargs: Any) -> Any:
        """Stands in for torch's: the backend loads the build from the read-only cache; a missing build is
        made by the parent in a job that runs no candidate code, then loaded here."""
        with self.guard.armed(False):
            module = self.requests.load(self.backend, args, kwargs)
            info = getattr(module, "__hipforge_build__", None) or getattr(self.backend, "last_build", None)
            self.builds.append(f"{build_name(args, kwargs)}: {_build_note(info)}")
            return self.exts.wrap(module)

    def model(self, size: int) -> Any:
        """ModelNew at a task size, holding the reference's weights where names and shapes agree (a Model
        built here under the same seed is only their source: its outputs judge nothing)."""
        import torch

        if size not in self.models:
            with self.guard.armed(False):
                ref, init_inputs = build_reference(self.tasks[size], self.device, self.cfg.init_seed)
                weights = ref.state_dict()
            torch.manual_seed(self.cfg.init_seed)
            with torch.device(self.device):
                new = sys.modules["candidate"].ModelNew(*init_inputs)
            dst = new.state_dict()
            new.load_state_dict({k: v for k, v in weights.items() if k in dst and dst[k].shape == v.shape},
                                strict=False)
            self.models[size] = new.to(self.device)
            del ref, weights
        return self.models[size]

    def op_timing(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The cpu backend's timed trials begin (``on``) or end: their launches run on one worker (cpu/workers.py).
        Whatever the candidate sets instead only adds to its own CPU time."""
        workers.one_worker(bool(msg["on"]))
        return {"event": "timing"}

    def failure(self, exc: BaseException, where: str, **fields: Any) -> Failed:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if self.guard.violations:
            check, message = self.guard.violations[0]
            return Failed("hacked", message, hack_check=check)
        if isinstance(exc, MemoryError) or "alloc" in text and "memory" in text:
            return Failed("runtime_error", f"{where}: out of memory: {text[:500]}", **fields)
        frames = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return Failed("runtime_error", f"{where}: {text[:1000]}", traceback=frames[-3000:], **fields)


def _build_note(info: dict[str, Any] | None) -> str:
    """What the backend says about a build (cache hit, seconds, fallbacks), if it says anything."""
    return ", ".join(f"{k}={v}" for k, v in (info or {}).items() if not isinstance(v, dict | list)) or "built"
