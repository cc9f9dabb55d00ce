"""Load a task, trace its Model with torch.fx and propagate full-size shapes on the meta device.

Everything runs on the meta device: shapes are the full-size ones the kernels are written for,
and no task is too big to trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hipforge import pyast


class Untranslatable(Exception):
    """The task uses something the translator cannot turn into a correct kernel; the message says what."""


@dataclass
class TracedTask:
    gm: Any  # torch.fx.GraphModule with node.meta["tensor_meta"] filled in
    state: frozenset[str]  # the model's parameter and buffer names (state_dict keys)


def trace_task(source: str) -> TracedTask:
    import torch
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp

    namespace: dict[str, Any] = {"__name__": "hipforge_translate_task"}
    try:
        exec(pyast.compile_tree(source, "<task>"), namespace)
        init_inputs = list(namespace["get_init_inputs"]())
        with torch.device("meta"):  # data-dependent construction (.item(), numpy) fails here
            model = namespace["Model"](*init_inputs)
            inputs = namespace["get_inputs"]()
    except Exception as exc:
        raise Untranslatable(f"unsupported model: it does not build on the meta device: "
                             f"{type(exc).__name__}: {exc}") from None
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as exc:  # data-dependent Python control flow, shape unpacking, ...
        raise Untranslatable(f"unsupported model: torch.fx cannot trace it: {type(exc).__name__}: {exc}") from None
    try:
        ShapeProp(gm).propagate(*inputs)
    except Exception as exc:
        raise Untranslatable(f"unsupported model: shape propagation failed: {type(exc).__name__}: {exc}") from None
    return TracedTask(gm, frozenset(model.state_dict()))
