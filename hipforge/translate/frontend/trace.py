"""Load a task, trace its Model with torch.fx and propagate full-size shapes on the meta device.

Everything runs on the meta device: shapes are the full-size ones the kernels are written for,
and no task is too big to trace.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, redirect_stderr
from dataclasses import dataclass
from typing import Any

from hipforge import pyast
from hipforge.translate.errors import Untranslatable
from hipforge.translate.frontend.decompose import decompositions

ATTRIBUTE_TYPES = (int, float)  # attributes read as get_attr nodes when tracing, if the forward allows


@dataclass
class TracedTask:
    gm: Any  # torch.fx.GraphModule with node.meta["tensor_meta"] filled in
    state: frozenset[str]  # the model's parameter and buffer names (state_dict keys)


def trace_task(source: str, attributes: tuple[type, ...] = ATTRIBUTE_TYPES) -> TracedTask:
    """The task's model traced; `attributes`: the types of attributes read as get_attr nodes if it can be."""
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
    gm = None
    levels = list(dict.fromkeys((attributes, (int,), ())))
    for level, types in enumerate(levels):
        try:
            gm = _trace(model, types)
            break
        except Untranslatable:  # a module traced through (decompose.py) that the translator cannot cover
            raise
        except Exception as exc:  # an attribute in Python control flow (range(self.layers)): traced as a value
            if level == len(levels) - 1:  # data-dependent Python control flow, shape unpacking, ...
                raise Untranslatable(f"unsupported model: torch.fx cannot trace it: {type(exc).__name__}: {exc}") \
                    from None
    try:
        # ShapeProp prints the traceback of each error it re-raises: the message below is the user's one line
        with redirect_stderr(io.StringIO()):
            ShapeProp(gm).propagate(*inputs)
    except Exception as exc:
        raise Untranslatable(f"unsupported model: shape propagation failed: {type(exc).__name__}: {exc}") from None
    return TracedTask(gm, frozenset(model.state_dict()))


def _trace(model: Any, attributes: tuple[type, ...]) -> Any:
    import torch.fx

    through = decompositions(model)  # found before _attributes_traced swaps the modules' classes

    class Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m: Any, qualified_name: str) -> bool:
            return id(m) not in through and super().is_leaf_module(m, qualified_name)

        def call_module(self, m: Any, forward: Any, args: Any, kwargs: Any) -> Any:
            return super().call_module(m, through.get(id(m), forward), args, kwargs)

    tracer = Tracer()
    tracer.proxy_buffer_attributes = True  # self.mask[:, :t] slices a buffer by a traced size
    with _attributes_traced(model, tracer, attributes) if attributes else nullcontext(), _tensor_of_proxies():
        graph = tracer.trace(model)
    return torch.fx.GraphModule(model, graph, type(model).__name__)


@contextmanager
def _attributes_traced(model: Any, tracer: Any, types: tuple[type, ...]) -> Iterator[None]:
    """The int attributes of the modules whose forward is traced (self.n_head, self.groups) are read as
    get_attr nodes, so that the forward refers to them rather than to their value at this problem size;
    so are the float attributes of the task's own modules (self.scale), which kernels then take at run
    time (torch's own modules traced through keep theirs: their forwards branch on them)."""
    swapped = []
    try:
        for name, module in model.named_modules():
            own = not type(module).__module__.startswith("torch.")
            names = [k for k, v in vars(module).items() if not k.startswith("_")
                     and (type(v) is int and int in types or type(v) is float and float in types and own)]
            if not names or name and tracer.is_leaf_module(module, name):
                continue
            cls = type(module)
            attributes = {k: _proxied(tracer, f"{name}.{k}" if name else k) for k in names}
            module.__class__ = type(cls.__name__, (cls,), {"__module__": cls.__module__, **attributes})
            swapped.append((module, cls))
        yield
    finally:  # every class swapped back, whatever failed
        for module, cls in swapped:
            module.__class__ = cls


def scalar_tensor(value: Any, **kwargs: Any) -> Any:
    """torch.tensor(self.scale) as the graph records it when self.scale is traced: a node of its own."""
    import torch

    return torch.tensor(value, **kwargs)


@contextmanager
def _tensor_of_proxies() -> Iterator[None]:
    """While tracing, torch.tensor of a traced attribute records a scalar_tensor node (torch.tensor itself
    cannot take a Proxy). Any other call is torch.tensor's own: the patch is seen by the whole process.
    A trace that starts while another one holds the patch leaves it to that one to undo."""
    import torch

    original = torch.tensor
    if getattr(original, "hipforge_patch", False):
        yield
        return

    def tensor(data: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(data, torch.fx.Proxy) and not args:
            return data.tracer.create_proxy("call_function", scalar_tensor, (data,), kwargs)
        return original(data, *args, **kwargs)

    tensor.hipforge_patch = True  # type: ignore[attr-defined]
    torch.tensor = tensor
    try:
        yield
    finally:
        torch.tensor = original


def _proxied(tracer: Any, target: str) -> property:
    return property(lambda self: tracer.create_proxy("get_attr", target, (), {}))
