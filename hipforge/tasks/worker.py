"""The sandbox side of ``reference_run``: a warm process that imports torch once and runs each task
in a fresh fork of itself, so a task pays no ``import torch`` and a crash takes down only its fork.

Run as ``python -I worker.py`` (stdlib + torch only, no hipforge imports). Protocol: one JSON job per
line on stdin; one JSON reply per line on the original stdout; everything else goes to stderr.
"""

from __future__ import annotations

import json
import math
import os
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Iterable
from typing import Any

MESSAGE_LIMIT = 1500  # characters of an error message or output tail worth keeping
OUT_OF_MEMORY = ("can't allocate memory", "not enough memory")  # torch's allocator raises RuntimeError


def main() -> None:
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints (library warnings) must never corrupt the reply stream
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    # the expensive parts, paid once and inherited by every fork: torch, and the ~6 s of lazy set-up
    # that a FlopCounterMode costs the first time it counts anything
    with torch.device("meta"), FlopCounterMode(display=False):
        torch.ones(2, 2) @ torch.ones(2, 2)

    replies.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        try:
            reply = run_job(json.loads(line))
        except Exception as e:  # e.g. fork failing under memory pressure: answer, and stay up
            reply = _fail("crashed", f"sandbox failure: {type(e).__name__}: {e}")
        replies.write(json.dumps(reply) + "\n")


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Fork, run the job in the child under its limits, and turn whatever happened into a reply."""
    log = tempfile.TemporaryFile()
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child never returns from here
        os.close(read_fd)
        _child(job, write_fd, log.fileno(), parent)
    os.close(write_fd)
    try:
        os.setpgid(pid, pid)  # also done in the child; whichever runs first wins the race
    except OSError:
        pass
    data, timed_out = _read_until(read_fd, time.monotonic() + job["time_limit_s"])
    os.close(read_fd)
    _kill_group(pid)  # the result is in (or time is up): nothing the task started may linger
    _, status = os.waitpid(pid, 0)
    log.seek(0, os.SEEK_END)
    log.seek(max(0, log.tell() - MESSAGE_LIMIT))
    tail = log.read().decode(errors="replace").strip()
    log.close()
    if timed_out:
        return _fail("too_slow", f"did not finish within the {job['time_limit_s']:g} s time limit")
    if data:
        return json.loads(data)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGKILL:
            return _fail("too_much_memory", "killed by SIGKILL (the system ran out of memory)" + _tail(tail))
        return _fail("crashed", f"died with signal {signal.Signals(sig).name} "
                                f"({signal.strsignal(sig)}){_tail(tail)}")
    return _fail("crashed", f"exited with status {os.WEXITSTATUS(status)} before reporting{_tail(tail)}")


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    while (left := deadline - time.monotonic()) > 0:
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)
    return b"", True


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
            return
        except OSError:
            continue


def _tail(text: str) -> str:
    return f"; last output:\n{text}" if text else ""


def _fail(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message[:MESSAGE_LIMIT]}


def _child(job: dict[str, Any], write_fd: int, log_fd: int, parent: int) -> None:
    try:
        os.setpgid(0, 0)
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: never outlive the worker
        if os.getppid() != parent:  # the worker died before prctl took effect
            os._exit(1)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        import faulthandler

        faulthandler.enable()  # a segfault leaves the Python stack in the output tail
        # RLIMIT_AS counts address space; the fork already holds torch's, so the budget comes on top.
        with open("/proc/self/status") as f:
            vm_kb = next(int(ln.split()[1]) for ln in f if ln.startswith("VmSize:"))
        limit = (vm_kb * 1024) + job["memory_limit_mb"] * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        reply = _run(job)
    except BaseException as e:  # noqa: BLE001  # anything at all must still come back as a reply
        reply = _fail("crashed", f"sandbox failure: {type(e).__name__}: {e}")
    data = json.dumps(reply).encode()
    while data:
        data = data[os.write(write_fd, data):]
    os._exit(0)


class _Rejected(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.reply = _fail(code, message)


def _run(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(job["threads"])
    filename = f"<task {job['name']}>"
    lines = job["source"].splitlines()
    module = types.ModuleType("hipforge_task")
    module.__file__ = filename
    sys.modules[module.__name__] = module  # dataclasses, pickling and friends look modules up here

    def call(code: str, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException as e:  # noqa: BLE001
            where = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == filename]
            at = f" [line {where[-1].lineno}: {lines[where[-1].lineno - 1].strip()}]" if where else ""
            raised = f"{type(e).__name__}: {str(e).strip()}{at}"
            if isinstance(e, MemoryError) or any(m in str(e) for m in OUT_OF_MEMORY):
                why = f"{what} ran out of memory under the {job['memory_limit_mb']} MB limit: {raised}"
                raise _Rejected("too_much_memory", why) from None
            raise _Rejected(code, f"{what} raised {raised}") from None

    try:
        compiled = compile(job["source"], filename, "exec")
        call("init_error", "module-level code", exec, compiled, module.__dict__)
        model_class = getattr(module, "Model", None)
        if not (isinstance(model_class, type) and issubclass(model_class, torch.nn.Module)):
            raise _Rejected("missing_model", "`Model` is not a subclass of torch.nn.Module")
        runs = []
        for _ in range(2):  # the second run checks that one seed always gives the same output
            start = time.perf_counter()
            torch.manual_seed(job["seed"])
            init_inputs = call("init_error", "get_init_inputs()", module.get_init_inputs)
            model = call("init_error", "Model(*get_init_inputs())", model_class, *init_inputs)
            torch.manual_seed(job["seed"])
            inputs = call("inputs_error", "get_inputs()", module.get_inputs)
            init_s = time.perf_counter() - start
            with torch.no_grad():
                start = time.perf_counter()
                out = call("forward_error", "forward", model, *inputs)
                runs.append((_tensors(out), init_s, time.perf_counter() - start))
            del model, inputs
        (first, init_s, forward_s), (second, _, forward2_s) = runs
        _check_finite(first)
        _check_same(first, second, job["seed"])
    except _Rejected as rejected:
        return rejected.reply
    return {"ok": True, "shapes": [list(t.shape) for t in first], "dtypes": [str(t.dtype) for t in first],
            "init_s": init_s, "forward_s": min(forward_s, forward2_s),
            "fp64_gap": _fp64_gap(module, model_class, job["seed"], first), **work_profile(job.get("full_source"))}


def _fp64_gap(module: Any, model_class: Any, seed: int, first: list[Any]) -> float | None:
    """How far the float32 outputs lie from the same model and inputs in float64, in units of KernelBench's
    fp32 tolerance (atol = rtol = 1e-4). Above 1 these sizes are too ill-conditioned to judge a kernel at
    that tolerance (a batch norm over 1x1 maps of two samples); None: not float32, or no float64 run."""
    import torch

    if not all(t.dtype == torch.float32 and t.numel() for t in first):
        return None
    try:
        torch.manual_seed(seed)
        model = model_class(*module.get_init_inputs()).double()
        torch.manual_seed(seed)
        inputs = widened(module.get_inputs())
        with torch.no_grad():
            return fp64_gap(zip(first, _tensors(model(*inputs)), strict=True))
    except Exception:  # noqa: BLE001  # ops without float64 kernels, dtype-sensitive code: no verdict
        return None


def widened(values: list[Any]) -> list[Any]:
    """A model's arguments for its float64 twin: float32 tensors as float64, the rest as they are."""
    import torch

    return [v.double() if isinstance(v, torch.Tensor) and v.dtype == torch.float32 else v for v in values]


def fp64_gap(pairs: Iterable[tuple[Any, Any]], atol: float = 1e-4, rtol: float = 1e-4) -> float:
    """The largest distance of float32 outputs from their float64 twins, (float32, float64) pairs, in units
    of the tolerance."""
    return max(((a.double() - b).abs() / (atol + rtol * b.abs())).max().item() for a, b in pairs)


def work_profile(source: str | None) -> dict[str, Any]:
    """FLOPs and the least bytes a kernel must move (inputs, parameters, outputs) at full size, counted
    on the meta device so no memory is touched. Tasks the meta device cannot run get no profile."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if source is None:
        return {}
    try:
        module = types.ModuleType("hipforge_task_full")
        exec(compile(source, "<task full>", "exec"), module.__dict__)
        with torch.device("meta"), torch.no_grad():
            model = module.Model(*module.get_init_inputs())
            inputs = [t for t in module.get_inputs() if isinstance(t, torch.Tensor)]
            with FlopCounterMode(display=False) as counter:
                outputs = _tensors(model(*inputs))
        moved = sum(t.nbytes for t in [*inputs, *outputs]) + sum(p.nbytes for p in model.parameters())
        return {"flops": int(counter.get_total_flops()), "bytes": int(moved),
                "full_shapes": [list(t.shape) for t in outputs]}
    except Exception:  # noqa: BLE001  # data-dependent ops (nonzero, .item()) have no meta kernels
        return {}


def _tensors(out: Any) -> list[Any]:
    import torch

    items = list(out) if isinstance(out, tuple | list) else [out]
    if not items:
        raise _Rejected("non_tensor_output", f"forward returned an empty {type(out).__name__}")
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            what = f"output {i} is" if isinstance(out, tuple | list) else "forward returned"
            raise _Rejected("non_tensor_output", f"{what} a {type(item).__name__}, not a torch.Tensor")
    return items


def _check_finite(outputs: list[Any]) -> None:
    import torch

    for i, t in enumerate(outputs):
        if t.is_floating_point() or t.is_complex():
            for name, bad in (("NaN", torch.isnan(t)), ("Inf", torch.isinf(t))):
                count = int(bad.sum())
                if count:
                    what = f"output {i} contains {name} ({count} of {t.numel()} values)"
                    raise _Rejected("non_finite_output", what)


def _check_same(first: list[Any], second: list[Any], seed: int) -> None:
    import torch

    if len(first) != len(second):
        counts = f"{len(first)} and {len(second)} outputs"
        raise _Rejected("non_deterministic", f"two runs with seed {seed} return {counts}")
    for i, (a, b) in enumerate(zip(first, second, strict=True)):
        if a.shape != b.shape or a.dtype != b.dtype or not torch.equal(a, b):
            comparable = a.shape == b.shape and not a.is_complex() and not b.is_complex()
            diff = (a.double() - b.double()).abs().max().item() if comparable else math.inf
            raise _Rejected("non_deterministic",
                            f"two runs with seed {seed} differ: output {i}, max abs difference {diff:.3g}")


if __name__ == "__main__":
    main()
