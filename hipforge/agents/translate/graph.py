"""Load a task, trace its Model with torch.fx and propagate full-size shapes on the meta device.

Everything runs on the meta device: shapes are the full-size ones the kernels are written for,
and no task is too big to trace. Parameter shapes are tied back to the init inputs, so that
ModelNew rebuilds them at whatever size the evaluator constructs it with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hipforge import pyast


class Untranslatable(Exception):
    """The task uses something the translator cannot turn into a correct kernel; the message says what."""


@dataclass(frozen=True)
class StateSpec:
    name: str  # dotted state_dict key, e.g. "bn1.running_mean"
    shape_expr: str  # Python expression over `init_inputs` that rebuilds its shape
    buffer: bool


@dataclass
class TracedTask:
    gm: Any  # torch.fx.GraphModule with node.meta["tensor_meta"] filled in
    state: list[StateSpec]
    init_inputs: list[Any]


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
    buffers, literals = {name for name, _ in model.named_buffers()}, model_literals(source)
    state = [StateSpec(name, shape_expression(tuple(t.shape), init_inputs, name, literals), name in buffers)
             for name, t in model.state_dict().items()]
    return TracedTask(gm, state, init_inputs)


def model_literals(source: str) -> frozenset[int]:
    """Int literals written in the Model class: sizes fixed by the model itself (Conv2d(3, 96, 11))."""
    import ast

    tree = pyast.parse(source, "<task>")
    return frozenset(node.value for cls in tree.body if isinstance(cls, ast.ClassDef) and cls.name == "Model"
                     for node in ast.walk(cls) if isinstance(node, ast.Constant) and type(node.value) is int)


def shape_expression(shape: tuple[int, ...], init_inputs: list[Any], name: str,
                     literals: frozenset[int] = frozenset()) -> str:
    """`shape` written over the init inputs: sizes come from them, so smoke-scaled inits work too.

    A size no init input gives is a quotient of two (out_channels // groups of a grouped conv's
    weight), else a literal of the Model class (smoke scaling never edits the class)."""
    for i, value in enumerate(init_inputs):  # a shape passed whole, e.g. bias_shape=(C, 1, 1)
        if isinstance(value, tuple | list) and tuple(value) == shape:
            return f"tuple(init_inputs[{i}])"
    dims = []
    for dim in shape:
        dims.append(_dim_expression(dim, init_inputs) or _quotient_expression(dim, init_inputs)
                    or (str(dim) if dim in literals else None))
        if dims[-1] is None:
            raise Untranslatable(f"unsupported parameter shape: {name} {shape} is not derivable from the init inputs")
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _quotient_expression(dim: int, init_inputs: list[Any]) -> str | None:
    ints = [(i, v) for i, v in enumerate(init_inputs) if type(v) is int and v > 1]
    return next((f"init_inputs[{i}] // init_inputs[{j}]" for i, a in ints for j, b in ints
                 if i != j and a % b == 0 and a // b == dim), None)


def _dim_expression(dim: int, init_inputs: list[Any]) -> str | None:
    if dim == 1:
        return "1"
    for i, value in enumerate(init_inputs):
        if type(value) is int and value == dim:
            return f"init_inputs[{i}]"
        if isinstance(value, tuple | list):
            for k, item in enumerate(value):
                if type(item) is int and item == dim:
                    return f"init_inputs[{i}][{k}]"
    return None
