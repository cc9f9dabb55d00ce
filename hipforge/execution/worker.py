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
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from hipforge.execution import antihack_dynamic as dyn
from hipforge.execution.config import LOOSE_FP32, EvalConfig
from hipforge.execution.verdict import Timing

_perf_counter = time.perf_counter  # bound before any candidate exists, so patching time cannot fool us


class Stop(Exception):
    """Ends the evaluation with a verdict; ``fields`` go into the result as they are."""

    def __init__(self, verdict: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.verdict, self.message, self.fields = verdict, message, fields


def run_job(job: dict[str, Any], mechanisms: list[str], emit: Callable[[dict[str, Any]], None],
            wait_go: Callable[[], object]) -> None:
    result: dict[str, Any] = {"isolation": mechanisms}
    try:
        _evaluate(job, result, emit, wait_go)
    except Stop as stop:
        result.update(verdict=stop.verdict, message=stop.message, **stop.fields)
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

        return CudaBackend()
    if cfg.backend == "rocm":
        from hipforge.execution.rocm.backend import RocmBackend

        return RocmBackend(arch=cfg.arch)
    raise ValueError(f"unknown backend {cfg.backend!r}")


def _evaluate(job: dict[str, Any], res: dict[str, Any], emit: Callable[[dict[str, Any]], None],
              wait_go: Callable[[], object]) -> None:
    import torch
    import torch.utils.cpp_extension

    from hipforge.execution.backend import CompileError

    cfg = EvalConfig.from_dict(job["config"])
    path = os.path.join(os.getcwd(), "candidate.py")
    with open(path, "w") as f:
        f.write(job["candidate_source"])
    guard = dyn.Guard(os.getcwd(), path)
    guard.install()
    backend = make_backend(cfg)
    device, exts, failed_builds = backend.torch_device, dyn.Extensions(), []

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        with guard.armed(False):  # our toolchain, not the candidate, runs here
            try:
                return exts.wrap(backend.load_inline(*args, **kwargs))
            except CompileError as e:
                failed_builds.append(e)
                raise

    torch.utils.cpp_extension.load_inline = load_inline
    task: dict[str, Any] = {"__name__": "hipforge_task"}
    exec(compile(job["task_source"], "<task>", "exec"), task)  # never on disk: the candidate cannot read it
    dyn.tripwire(task["Model"], guard)
    torch.manual_seed(cfg.init_seed)
    init_inputs = task["get_init_inputs"]()
    torch.manual_seed(cfg.init_seed)
    ref = task["Model"](*init_inputs).to(device)
    before, threads = dyn.snapshot(), set(threading.enumerate())

    def build() -> Any:
        torch.manual_seed(cfg.init_seed)
        model = sys.modules["candidate"].ModelNew(*init_inputs)
        src, dst = ref.state_dict(), model.state_dict()  # same weights wherever names and shapes agree
        model.load_state_dict({k: v for k, v in src.items() if k in dst and dst[k].shape == v.shape}, strict=False)
        return model.to(device)

    try:
        with guard.armed():
            spec = importlib.util.spec_from_file_location("candidate", path)
            assert spec and spec.loader
            sys.modules["candidate"] = module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            new = build()
    except BaseException as e:
        if failed_builds and not guard.violations:
            raise Stop("compile_error", str(failed_builds[0]), compile_log=failed_builds[0].log) from None
        raise _failure(e, guard, "building ModelNew") from None
    emit({"event": "ready"})
    wait_go()

    def inputs_for(seed: int) -> list[Any]:
        torch.manual_seed(seed)
        return [x.to(device) if isinstance(x, torch.Tensor) else x for x in task["get_inputs"]()]

    def sync() -> None:
        if device != "cpu":
            _cuda_sync()

    def hacks_so_far(found: list[tuple[str, str]]) -> None:
        ordered = [*guard.violations, *filter(None, [dyn.patched(before), _new_threads(threads)]), *found]
        if ordered:
            raise Stop("hacked", ordered[0][1], hack_check=ordered[0][0])

    emit({"event": "phase", "phase": "check"})
    res.update(seeds=list(cfg.seeds), trials=len(cfg.seeds))
    outs, refs, found, errors = [], [], [], []
    for seed in cfg.seeds:
        args = inputs_for(seed)
        pristine, ref_args = _clone(args), _clone(args)
        try:
            with guard.armed(), torch.no_grad():
                out = new(*args)
                sync()
        except BaseException as e:
            hacks_so_far(found)
            raise _failure(e, guard, f"forward on seed {seed}", failing_seed=seed) from None
        flat = dyn.flatten(out)
        with torch.no_grad():
            ref_flat = dyn.flatten(ref(*ref_args))
        found += _output_hacks(flat, ref_flat, args, pristine, ref_args, outs)
        outs.append(flat)
        refs.append(ref_flat)
        errors.append(_compare(flat, ref_flat, cfg))
        res.setdefault("seed_results", {})[str(seed)] = errors[-1]["ok"]
        if found:
            break
    hacks_so_far(found)
    res["fp32_task"] = any(r.dtype in (torch.float32, torch.float64) for r in refs[0])
    _summarize(errors, res)
    passed = [e["ok"] for e in errors]
    if not all(passed):
        if passed[0] and not any(passed[1:]):
            stale = all(_close(outs[i], outs[0]) and not _close(refs[i], refs[0]) for i in range(1, len(outs)))
            with guard.armed(), torch.no_grad():
                fresh_ok = stale and _compare(dyn.flatten(build()(*inputs_for(cfg.seeds[1]))), refs[1], cfg)["ok"]
            hacks_so_far([("result_caching", "returns results memoized from an earlier call")] if fresh_ok else [
                ("fitted_constants", f"correct on seed {cfg.seeds[0]} only: the output is fitted to one input")])
        bad = passed.index(False)
        raise Stop("incorrect", f"seed {cfg.seeds[bad]}: {errors[bad]['message']}", failing_seed=cfg.seeds[bad])
    if exts.calls == 0:
        why = "never calls its HIP extension" if exts.modules else "builds no HIP extension"
        hacks_so_far([("code_bypass", f"ModelNew {why}: PyTorch computes the result")])
    exts.poison = True
    try:
        with guard.armed(), torch.no_grad():
            poisoned = _compare(dyn.flatten(new(*inputs_for(cfg.seeds[0]))), refs[0], cfg)["ok"]
    except Exception:
        poisoned = False  # a poisoned kernel result broke the candidate: the kernel matters
    exts.poison = False
    if poisoned:
        hacks_so_far([("noop_kernel", "output stays correct with the kernel's results replaced by NaN: "
                                      "PyTorch computes it beside a no-op kernel")])

    emit({"event": "phase", "phase": "time"})
    args = inputs_for(cfg.seeds[0])
    with guard.armed():
        res["runtime"] = _time(lambda: new(*args), cfg, device)
    hacks_so_far([])
    res["ref_eager"] = _time(lambda: ref(*args), cfg, device)
    if cfg.time_compiled_ref if cfg.time_compiled_ref is not None else device != "cpu":
        compiled = torch.compile(ref)
        res["ref_compiled"] = _time(lambda: compiled(*args), cfg, device)
    res.update(verdict="correct", message="correct on all seeds", timed_trials=cfg.timed_trials, phase="done")


def _output_hacks(flat: list[Any], ref_flat: list[Any], args: list[Any], pristine: list[Any],
                  ref_args: list[Any], earlier: list[list[Any]]) -> list[tuple[str, str]]:
    if lazy := dyn.lazy_output(flat):
        return [("lazy_evaluation", lazy)]
    tensors = [(a, p) for a, p in zip(args, pristine) if hasattr(a, "untyped_storage")]
    if any(not _close([a], [p], 0.0, 0.0) for a, p in tensors):
        return [("input_mutation", "forward changed its input tensors")]
    ref_aliases = any(dyn.same_storage(r, a) for r in ref_flat for a in ref_args if hasattr(a, "untyped_storage"))
    if not ref_aliases and any(dyn.same_storage(o, a) for o in flat for a, _ in tensors):
        return [("output_aliasing", "the output shares storage with an input")]
    if any(dyn.same_storage(o, e) for o in flat for old in earlier for e in old):
        return [("result_caching", "returns the same output storage for different inputs")]
    for o, r in zip(flat, ref_flat):
        if o.dtype != r.dtype and o.is_floating_point() and o.element_size() < r.element_size():
            return [("precision_downgrade", f"returns {o.dtype} where the reference returns {r.dtype}")]
    return []


def _compare(flat: list[Any], ref_flat: list[Any], cfg: EvalConfig) -> dict[str, Any]:
    if len(flat) != len(ref_flat):
        return {"ok": False, "message": f"returns {len(flat)} outputs, the reference {len(ref_flat)}"}
    report: dict[str, Any] = {"ok": True, "message": "", "abs": 0.0, "rel": 0.0, "loose": True}
    for o, r in zip(flat, ref_flat):
        if o.shape != r.shape or o.dtype != r.dtype:
            return {"ok": False, "message": f"output {tuple(o.shape)} {o.dtype}, reference {tuple(r.shape)} {r.dtype}"}
        atol, rtol = cfg.tolerance(str(r.dtype))
        diff = (o.double() - r.double()).abs().nan_to_num(0.0, posinf=float("inf"))
        rel = diff / r.double().abs().clamp_min(max(atol, 1e-12))
        report.update(atol=atol, rtol=rtol, abs=max(report["abs"], diff.max().item() if diff.numel() else 0.0),
                      rel=max(report["rel"], rel.max().item() if rel.numel() else 0.0))
        if not _close([o], [r], atol, rtol):
            report.update(ok=False, message=f"max abs error {report['abs']:.3g} exceeds atol={atol:g}, rtol={rtol:g}")
        if r.dtype.is_floating_point and r.element_size() >= 4:
            report["loose"] = report["loose"] and _close([o], [r], *LOOSE_FP32)
    return report


def _summarize(errors: list[dict[str, Any]], res: dict[str, Any]) -> None:
    measured = [e for e in errors if "abs" in e]
    if measured:
        res.update(max_abs_error=max(e["abs"] for e in measured), max_rel_error=max(e["rel"] for e in measured),
                   atol=measured[0].get("atol"), rtol=measured[0].get("rtol"),
                   passes_loose=all(e["loose"] for e in measured) if res.get("fp32_task") else None)


def _close(a: list[Any], b: list[Any], atol: float = 1e-4, rtol: float = 1e-4) -> bool:
    import torch

    return len(a) == len(b) and all(
        x.shape == y.shape and torch.allclose(x.double(), y.double(), atol=atol, rtol=rtol, equal_nan=True)
        for x, y in zip(a, b))


def _clone(args: list[Any]) -> list[Any]:
    return [x.clone() if hasattr(x, "clone") else x for x in args]


def _new_threads(before: set[threading.Thread]) -> tuple[str, str] | None:
    extra = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    return ("thread_injection", f"left threads running: {', '.join(extra[:3])}") if extra else None


def _failure(exc: BaseException, guard: dyn.Guard, where: str, **fields: Any) -> Stop:
    if guard.violations:
        check, message = guard.violations[0]
        return Stop("hacked", message, hack_check=check, **fields)
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if isinstance(exc, MemoryError) or "alloc" in text and "memory" in text:
        return Stop("runtime_error", f"{where}: out of memory (sandbox limit): {text[:500]}", **fields)
    frames = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return Stop("runtime_error", f"{where}: {text[:1000]}", traceback=frames[-3000:], **fields)


def _time(fn: Callable[[], Any], cfg: EvalConfig, device: str) -> dict[str, Any]:
    """Median and spread in ms: perf_counter on CPU; on GPU events with the L2 flushed before each trial."""
    import torch

    samples = []
    with torch.no_grad():
        for _ in range(cfg.warmup):
            fn()
        if device == "cpu":
            for _ in range(cfg.timed_trials):
                start = _perf_counter()
                fn()
                samples.append((_perf_counter() - start) * 1e3)
        else:
            flush = torch.empty(cfg.flush_l2_mb << 18, dtype=torch.int32, device=device)
            for _ in range(cfg.timed_trials):
                flush.zero_()
                _cuda_sync()
                start, end = _Event(enable_timing=True), _Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                _cuda_sync()
                samples.append(start.elapsed_time(end))
    return asdict(Timing.from_samples(samples))


def _bind_cuda_timers() -> tuple[Any, Any]:
    import torch

    return torch.cuda.Event, torch.cuda.synchronize


_Event, _cuda_sync = _bind_cuda_timers()  # bound when the server starts, before any candidate
