"""One evaluation inside the sandbox: build, multi-seed correctness, anti-hack checks, timing.

Runs in a fresh fork of the sandbox server, after ``enter_isolation``. For each seed the candidate
runs first and the reference after it, on a pristine copy of the same inputs: while candidate code
runs, the reference output for those inputs does not exist anywhere to be found.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import traceback
import types
from collections.abc import Callable
from typing import Any

from hipforge.execution import antihack_dynamic as dyn
from hipforge.execution.checks import Checks, Stop
from hipforge.execution.config import EvalConfig
from hipforge.execution.measure import cuda_sync, time_callable

Emit = Callable[[dict[str, Any]], None]
GPU_JOB_CPU_THREADS = 4


def run_job(job: dict[str, Any], mechanisms: list[str], emit: Emit, wait_go: Callable[[], object]) -> None:
    result: dict[str, Any] = {"isolation": mechanisms}
    try:
        _Run(job, result).evaluate(emit, wait_go)
    except Stop as stop:
        result.update(verdict=stop.verdict, message=stop.message, **stop.fields)
    except Exception as e:  # the task's own code (get_inputs) or the evaluator itself failed
        result.update(verdict="runtime_error", message=f"evaluation failed: {type(e).__name__}: {e}"[:1000],
                      traceback=traceback.format_exc()[-3000:])
    emit({"event": "result", "data": result})


def make_backend(cfg: EvalConfig) -> Any:
    if ":" in cfg.backend:  # "package.module:factory", called with the config
        module, _, attr = cfg.backend.partition(":")
        return getattr(importlib.import_module(module), attr)(cfg)
    if cfg.backend == "cpu":
        from hipforge.execution.cpu.backend import CpuBackend

        return CpuBackend(wavefront=cfg.wavefront)
    if cfg.backend == "cuda":
        from hipforge.execution.cuda.backend import CudaBackend

        return CudaBackend(arch=cfg.arch) if cfg.arch.startswith("sm_") else CudaBackend()
    if cfg.backend == "rocm":
        from hipforge.execution.rocm.backend import RocmBackend

        return RocmBackend(arch=cfg.arch)
    raise ValueError(f"unknown backend {cfg.backend!r}")


class _Run(Checks):
    def __init__(self, job: dict[str, Any], res: dict[str, Any]) -> None:
        import torch

        self.cfg, self.res, self.job = EvalConfig.from_dict(job["config"]), res, job
        self.path = os.path.join(os.getcwd(), "candidate.py")
        with open(self.path, "w") as f:
            f.write(job["candidate_source"])
        self.guard = dyn.Guard(os.getcwd(), self.path)
        self.guard.install()
        self.backend = make_backend(self.cfg)
        self.device = self.backend.torch_device
        if self.device == "cuda":  # fp32 means fp32: cuDNN convs would otherwise run the reference in TF32
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
            # the work is on the GPU: a CPU thread pool per job (one per core) only uses up RLIMIT_NPROC
            torch.set_num_threads(min(torch.get_num_threads(), GPU_JOB_CPU_THREADS))
        self.exts, self.failed_builds, self.builds = dyn.Extensions(), [], []
        self.threads: set[threading.Thread] = set()
        # never written to disk, so the candidate cannot read the reference's source
        self.task = types.ModuleType("hipforge_task")
        exec(compile(job["task_source"], "<task>", "exec"), self.task.__dict__)
        dyn.tripwire(self.task.Model, self.guard)
        torch.manual_seed(self.cfg.init_seed)
        self.init_inputs = self.task.get_init_inputs()
        torch.manual_seed(self.cfg.init_seed)
        with torch.device(self.device):  # weights built where they run: an 8 GB MLP never passes through host memory
            self.ref = self.task.Model(*self.init_inputs).to(self.device)

    def evaluate(self, emit: Emit, wait_go: Callable[[], object]) -> None:
        import torch
        import torch.utils.cpp_extension

        if self.cfg.gate:
            self.gate()
        self.compile_reference()
        torch.utils.cpp_extension.load_inline = self.load_inline
        self.before, self.env = dyn.snapshot(), dict(os.environ)
        self.threads.update(threading.enumerate())
        try:
            with self.guard.armed():
                spec = importlib.util.spec_from_file_location("candidate", self.path)
                assert spec and spec.loader
                sys.modules["candidate"] = module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                new = self.build()
        except BaseException as e:
            if self.failed_builds and not self.guard.violations:
                err = self.failed_builds[0]
                raise Stop("compile_error", str(err), compile_log=err.log) from None
            raise self.failure(e, "building ModelNew") from None
        self.res["compile_log"] = "\n".join(self.builds)
        emit({"event": "ready"})
        if not wait_go():  # the parent lets one evaluation at a time past this: timings stay undisturbed
            raise Stop("runtime_error", "the evaluator went away before the run")
        emit({"event": "phase", "phase": "check"})
        self.check(new)
        emit({"event": "phase", "phase": "time"})
        self.time(new)

    def compile_reference(self) -> None:
        """torch.compile the reference and run it once, before any candidate code exists and outside the
        timing lock: compiling takes 15-60 s, which would otherwise hold up every other evaluation."""
        import torch

        self.compiled, self.compile_error = None, ""
        wanted = self.cfg.time_compiled_ref if self.cfg.time_compiled_ref is not None else self.device != "cpu"
        if not wanted or self.job.get("baseline"):  # a cached baseline already has the compiled timing
            return
        sys.modules["hipforge_task"] = self.task  # dynamo looks the Model's module up by name
        try:
            compiled = torch.compile(self.ref)
            with torch.no_grad():
                compiled(*self.inputs(self.cfg.seeds[0]))
            self.compiled = compiled
        except Exception as e:
            self.compile_error = f"{type(e).__name__}: {str(e)[:300]}"

    def gate(self) -> None:
        """The gfx950 device-code gate (clang), here in the sandbox: an #include can read files."""
        from hipforge.execution.gate import CompileGate

        arch = self.cfg.arch if self.cfg.arch.startswith("gfx") else "gfx950"  # sm_90 names a cuda build
        gate = CompileGate(arch=(arch,))
        if reason := gate.unavailable_reason():
            self.res["gate_log"] = reason
            return
        known = self.job.get("gate_known")  # this source's verdict from an earlier job (the parent's cache)
        if known is None:
            result = gate.check_candidate(self.job["candidate_source"])
            ok, log = result.ok, result.log
        else:
            ok, log = known["ok"], f"(gate verdict cached by content)\n{known['log']}"
        self.res.update(gate_log=log, gate_ok=ok)
        if not ok:
            raise Stop("compile_error", f"the {arch} compile gate rejects the HIP source", phase="gate")

    def load_inline(self, *args: Any, **kwargs: Any) -> Any:
        """Stands in for torch's: the backend builds the source for its toolchain."""
        from hipforge.execution.backend import CompileError

        with self.guard.armed(False):  # our toolchain, not the candidate, runs here
            started = set(threading.enumerate())
            try:
                module = self.backend.load_inline(*args, **kwargs)
            except CompileError as e:
                self.failed_builds.append(e)
                raise
            finally:  # threads the backend keeps (a build pool) are not the candidate's
                self.threads.update(set(threading.enumerate()) - started)
            info = getattr(module, "__hipforge_build__", None) or getattr(self.backend, "last_build", None)
            self.builds.append(f"{kwargs.get('name', args[0] if args else '?')}: {_build_note(info)}")
            return self.exts.wrap(module)

    def build(self) -> Any:
        import torch

        torch.manual_seed(self.cfg.init_seed)
        with torch.device(self.device):
            model = sys.modules["candidate"].ModelNew(*self.init_inputs)
        src, dst = self.ref.state_dict(), model.state_dict()  # same weights where names and shapes agree
        shared = {k: v for k, v in src.items() if k in dst and dst[k].shape == v.shape}
        model.load_state_dict(shared, strict=False)
        return model.to(self.device)

    def inputs(self, seed: int) -> list[Any]:
        import torch

        torch.manual_seed(seed)
        with torch.device(self.device):  # factories draw on the device: KernelBench-size inputs in ms, not s
            raw = self.task.get_inputs()
        return [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in raw]

    def forward(self, model: Any, args: list[Any]) -> list[Any]:
        import torch

        with self.guard.armed(), torch.no_grad():
            out = model(*args)
            if self.device != "cpu":
                cuda_sync()
        return dyn.flatten(out)

    def hacked(self, found: list[tuple[str, str]]) -> None:
        """Raise for the first hack, sandbox violations first: they explain everything after them."""
        state = filter(None, [dyn.patched(self.before), _new_threads(self.threads)])
        ordered = [*self.guard.violations, *state, *found]
        if ordered:
            raise Stop("hacked", ordered[0][1], hack_check=ordered[0][0])

    def failure(self, exc: BaseException, where: str, **fields: Any) -> Stop:
        self.hacked([])
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if isinstance(exc, MemoryError) or "alloc" in text and "memory" in text:
            return Stop("runtime_error", f"{where}: out of memory: {text[:500]}", **fields)
        frames = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return Stop("runtime_error", f"{where}: {text[:1000]}", traceback=frames[-3000:], **fields)

    def time(self, new: Any) -> None:

        cfg, args = self.cfg, self.inputs(self.cfg.seeds[0])
        with self.guard.armed():
            self.res["runtime"] = time_callable(lambda: new(*args), cfg, self.device)
        self.hacked([])
        if baseline := self.job.get("baseline"):  # this task's reference was timed before on this machine
            self.res.update(baseline, verdict="correct", timed_trials=cfg.timed_trials, phase="done",
                            message="correct on all seeds (reference timings from the baseline cache)")
            return
        self.res["ref_eager"] = time_callable(lambda: self.ref(*args), cfg, self.device)
        message = "correct on all seeds"
        if self.compiled is not None:
            os.environ.clear()  # no candidate code runs from here on: undo its environment (its CXX=hipcc)
            os.environ.update(self.env)
            compiled = self.compiled
            self.res["ref_compiled"] = time_callable(lambda: compiled(*args), cfg, self.device)
        elif self.compile_error:  # the candidate is still correct; only this baseline is missing
            message += f" (torch.compile reference failed: {self.compile_error})"
        self.res.update(verdict="correct", message=message, timed_trials=cfg.timed_trials, phase="done")


def _build_note(info: dict[str, Any] | None) -> str:
    """What the backend says about a build (cache hit, seconds, fallbacks), if it says anything."""
    return ", ".join(f"{k}={v}" for k, v in (info or {}).items() if not isinstance(v, dict | list)) or "built"


def _new_threads(before: set[threading.Thread]) -> tuple[str, str] | None:
    extra = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    return ("thread_injection", f"left threads running: {', '.join(extra[:3])}") if extra else None
