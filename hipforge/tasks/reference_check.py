"""The sandbox side of ``reference_run``: a job role (hipforge.sandbox) that runs one task's reference and
says whether it can enter the pipeline: it runs, twice with the same result, with finite tensor outputs,
how far its float32 outputs lie from float64, and its FLOPs and bytes at full size."""

from __future__ import annotations

import math
import signal
import sys
import time
import traceback
import types
from typing import Any

from hipforge.execution.numerics import fp64_gap, widened

MESSAGE_LIMIT = 1500  # characters of an error message or output tail worth keeping
OUT_OF_MEMORY = ("can't allocate memory", "not enough memory")  # torch's allocator raises RuntimeError
# the full-size profile is an estimate: a model whose meta run costs more keeps none (an L3 LSTM's 512
# steps x 6 layers, decomposed op by op on the meta device, took 37 s of a 60 s smoke check on an idle core)
PROFILE_BUDGET_S = 8.0


class _OverBudget(Exception):
    pass


def preload() -> None:
    """Paid once in the sandbox server and inherited by every fork: the ~6 s of lazy set-up a FlopCounterMode
    costs the first time it counts anything."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"), FlopCounterMode(display=False):
        torch.ones(2, 2) @ torch.ones(2, 2)


def run(job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
    """The role: check one reference and send the reply (its limits are the sandbox job's)."""
    import faulthandler

    faulthandler.enable()  # a segfault leaves the Python stack in the output tail
    try:
        reply = _run(job)
    except BaseException as e:  # noqa: BLE001  # anything at all must still come back as a reply
        reply = _fail("crashed", f"sandbox failure: {type(e).__name__}: {e}")
    channel.emit({"event": "reply", **reply})


def _fail(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message[:MESSAGE_LIMIT]}


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
            "fp64_gap": _fp64_gap(module, model_class, job["seed"], first),
            **work_profile(job.get("full_source"), PROFILE_BUDGET_S)}


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


def work_profile(source: str | None, budget_s: float | None = None) -> dict[str, Any]:
    """FLOPs and the least bytes a kernel must move (inputs, parameters, outputs) at full size, counted
    on the meta device so no memory is touched. Tasks the meta device cannot run, or not within
    ``budget_s``, get no profile."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if source is None:
        return {}
    if budget_s:  # only in a job's own process (its main thread): the alarm is then ours alone
        signal.signal(signal.SIGALRM, _over_budget)
        signal.setitimer(signal.ITIMER_REAL, budget_s)
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
    except Exception:  # noqa: BLE001  # data-dependent ops (nonzero, .item()) have no meta kernels; over budget
        return {}
    finally:
        if budget_s:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _over_budget(signum: int, frame: Any) -> None:
    raise _OverBudget("the full-size profile ran over its budget")


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

