"""The in-sandbox half of the sanity checks: code appended to a task's smoke source.

It wraps ``Model.forward`` in place (rebinding the name ``Model`` would break ``super(Model, self)``),
lets the original forward produce the output the sandbox checks, then probes the task with fresh
inputs and raises ``_HipforgeProbeFailure("<code>: <why>")`` when a constant, an input copy or a
forward that ignores an input could pass for it, or when get_inputs/get_init_inputs disagree with
themselves between calls.
"""

from __future__ import annotations

import re

from hipforge.tasks.errors import TaskError

PROBE_CODES = ("constant_output", "input_copy", "unused_input", "inconsistent_inputs")
_FAILURE = re.compile(r"_HipforgeProbeFailure: (\w+): (.*?)(?: \[line \d+: .*\])?$", re.DOTALL)

_PROBE = """

import torch as _hf_torch


class _HipforgeProbeFailure(Exception):
    pass


def _hf_tensors(value):
    items = value if isinstance(value, (list, tuple)) else [value]
    return [v for v in items if isinstance(v, _hf_torch.Tensor)]


def _hf_close(a, b):
    return a.numel() == b.numel() and bool(_hf_torch.allclose(
        a.detach().reshape(-1).double(), b.detach().reshape(-1).double(), rtol=TOLERANCE, atol=TOLERANCE))


def _hf_alike(a, b):
    if isinstance(a, _hf_torch.Tensor) or isinstance(b, _hf_torch.Tensor):
        return type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_hf_alike(x, y) for x, y in zip(a, b))
    return a == b


def _hf_fail(code, why):
    raise _HipforgeProbeFailure(code + ": " + why)


def _hf_clone(args):
    return [a.clone() if isinstance(a, _hf_torch.Tensor) else a for a in args]


def _hf_probe(model, args, out):
    fresh, again = list(get_inputs()), list(get_inputs())
    if not _hf_alike(fresh, again) or not _hf_alike(fresh, args):
        _hf_fail("inconsistent_inputs", "get_inputs() returns other structures, shapes or dtypes per call")
    if not _hf_alike(list(get_init_inputs()), list(get_init_inputs())):
        _hf_fail("inconsistent_inputs", "get_init_inputs() returns different values per call")
    outs = _hf_tensors(out)
    for i, (a, b) in enumerate(zip(outs, _hf_tensors(_hf_forward(model, *_hf_clone(fresh))))):
        if _hf_close(a, b):
            _hf_fail("constant_output", f"output {i} {tuple(a.shape)} is the same for two independent input "
                     f"draws (within {TOLERANCE:g}): a constant would pass for it")
    for i, o in enumerate(outs):
        for j, a in enumerate(args):
            if isinstance(a, _hf_torch.Tensor) and _hf_close(o, a):
                _hf_fail("input_copy", f"output {i} {tuple(o.shape)} equals input {j} (within {TOLERANCE:g})")
    used = [j for j, a in enumerate(args) if isinstance(a, _hf_torch.Tensor)]
    for j in used if len(used) > 1 else []:
        mixed = _hf_clone(args)
        mixed[j] = fresh[j]
        if all(_hf_close(a, b) for a, b in zip(outs, _hf_tensors(_hf_forward(model, *mixed)))):
            _hf_fail("unused_input", f"input {j} does not change the output (within {TOLERANCE:g})")


def _hf_checked_forward(self, *args):
    pristine = _hf_clone(args)  # a forward that works in place must not turn its input into its output
    out = _hf_forward(self, *args)
    with _hf_torch.no_grad():
        _hf_probe(self, pristine, out)
    return out


_hf_forward = Model.forward
Model.forward = _hf_checked_forward
"""


def probe_source(smoke_source: str, tolerance: float) -> str:
    """The smoke source with the probe appended (it adds no int constants for smoke scaling to touch)."""
    return smoke_source.rstrip("\n") + "\n" + _PROBE.replace("TOLERANCE", repr(float(tolerance)))


def probe_failure(error: TaskError) -> tuple[str, str] | None:
    """(code, why) when the error is the probe's verdict rather than the task's own failure."""
    match = _FAILURE.search(error.message)
    return (match[1], match[2]) if match and match[1] in PROBE_CODES else None
