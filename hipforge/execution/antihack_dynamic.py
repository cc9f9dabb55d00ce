"""Observations inside the candidate's process of what candidate code left behind: callables it rebound (a
snapshot taken before it is imported, compared after) and what ``forward`` returned. The guard armed around
candidate code is antihack_guard.py, the extension calls antihack_extensions.py. All of it runs where the
candidate runs, so it can only incriminate: the verdict's real checks are made outside the process.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from hipforge.execution.antihack_static import TIMING_NAMES


def watched_objects() -> dict[str, Any]:
    import time

    import torch
    import torch.nn.functional as F

    return {"time": time, "torch": torch, "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
            "torch.Tensor": torch.Tensor, "torch._C.TensorBase": torch._C.TensorBase,
            "torch.nn.functional": F, "torch.nn.Module": torch.nn.Module}


def evaluator_objects() -> dict[str, Any]:
    """The evaluator's own modules loaded in this process (the harness, the checks, the sandbox's client side)
    and the classes they define."""
    modules = {name: module for name, module in list(sys.modules.items())
               if module is not None and name.split(".")[0] == "hipforge"}
    classes = {f"{name}.{attr}": value for name, module in modules.items()
               for attr, value in list(vars(module).items())
               if isinstance(value, type) and getattr(value, "__module__", None) == name}
    return {**modules, **classes}


def snapshot() -> dict[tuple[str, str], int]:
    """Identity of every callable the evaluator or the reference might use, and of every function, class and
    module the evaluator's own modules and classes hold (a clock or a comparison rebound there changes what
    they do)."""
    found = {(label, name): id(value) for label, obj in watched_objects().items()
             for name, value in list(vars(obj).items()) if callable(value)}
    found.update({(label, name): id(value) for label, obj in evaluator_objects().items()
                  for name, value in list(vars(obj).items())
                  if callable(value) or isinstance(value, types.ModuleType | staticmethod | classmethod | property)})
    return found


def patched(before: dict[tuple[str, str], int]) -> tuple[str, str] | None:
    """(check, message) if the candidate replaced one of the snapshotted callables."""
    objects = {**watched_objects(), **evaluator_objects()}
    changed = [f"{label}.{name}" for (label, name), ident in before.items()
               if label not in objects or id(vars(objects[label]).get(name)) != ident]
    if not changed:
        return None
    ours = [c for c in changed if c.split(".")[0] == "hipforge"]
    if ours:
        return "judge_patch", f"rebound the evaluator's own {', '.join(ours[:3])}"
    timing = [c for c in changed
              if c.startswith(("time.", "torch.cuda.Event.")) or c.split(".")[-1] in TIMING_NAMES]
    if timing:
        return "timing_patch", f"replaced {', '.join(timing[:3])}"
    return "torch_patch", f"replaced {', '.join(changed[:3])}"


def lazy_output(outputs: list[Any]) -> str | None:
    import torch

    for out in outputs:
        if type(out) is not torch.Tensor:
            kind = f"{type(out).__module__}.{type(out).__qualname__}"
            return f"forward returned {kind}, not a plain torch.Tensor"
    if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
        return "a torch function/dispatch mode is left active after forward"
    return None


def same_storage(a: Any, b: Any) -> bool:
    storage = a.untyped_storage()
    return storage.data_ptr() == b.untyped_storage().data_ptr() and storage.nbytes() > 0


def identical(a: Any, b: Any) -> bool:
    import torch

    if torch.equal(a, b):
        return True
    return a.is_floating_point() and torch.allclose(a, b, 0.0, 0.0, equal_nan=True)
