"""fx graph -> IR. Each supported op is lowered by its table entry; anything else is Untranslatable."""

from __future__ import annotations

import builtins
import operator
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.frontend.trace import TracedTask
from hipforge.translate.ir.sizes import Size
from hipforge.translate.ir.values import Scalar, Val, indexed
from hipforge.translate.lower.losses import module_loss
from hipforge.translate.lower.modules import lower_module
from hipforge.translate.lower.tables import tables


def lower(traced: TracedTask) -> tuple[list[str], Val]:
    """The forward's argument names and the IR value it returns."""
    import torch

    functions, methods = tables()
    env: dict[Any, Any] = {}
    params: dict[tuple[str, tuple[int, ...]], Val] = {}
    names: list[str] = []
    output: Any = None

    def param(ref: str, shape: tuple[int, ...]) -> Val:
        ref = indexed(ref)
        return params.setdefault((ref, shape), Val("input", shape, ref=ref))

    anchor = next((n.name for n in traced.gm.graph.nodes if n.op == "placeholder" and "tensor_meta" in n.meta), None)
    for node in traced.gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op == "placeholder":
            names.append(node.name)
            env[node] = _placeholder(node, anchor)
        elif node.op == "get_attr" and type(value := operator.attrgetter(node.target)(traced.gm)) is int:
            env[node] = Size(value, indexed(f"self.{node.target}"), (), anchor)  # a size the model fixes (self.n_head)
        elif node.op == "get_attr" and type(value) is float:  # a constant the model holds (self.scale)
            ref = indexed(f"self.{node.target}")
            env[node] = Scalar(value, ref, anchor) if anchor is not None else value
        elif node.op == "get_attr":
            if meta is None or meta.dtype != torch.float32:  # kernels read every tensor as float*
                raise Untranslatable(f"unsupported parameter dtype: {node.target} is {getattr(meta, 'dtype', None)}")
            env[node] = (param(f"self.{node.target}", tuple(meta.shape)) if node.target in traced.state
                         else _constant(traced.gm, node.target, anchor))
        elif node.op == "output":
            output = env.get(node.args[0]) if not isinstance(node.args[0], tuple | list) else None
        else:
            args, kwargs = _resolve(node.args, env), _resolve(node.kwargs, env)
            try:
                if node.op == "call_module":
                    module = traced.gm.get_submodule(node.target)
                    env[node] = (module_loss(module, args) if isinstance(module, torch.nn.modules.loss._Loss)
                                 else lower_module(module, node.target, args[0], param))
                elif node.op == "call_method":
                    env[node] = methods[node.target](*args, **kwargs)
                else:
                    env[node] = functions[node.target](*args, **kwargs)
            except (KeyError, IndexError, TypeError, ValueError):  # an op, or an argument form, the tables do not know
                raise Untranslatable(f"unsupported op: {_op_name(node)} at node {node.name}") from None
            except Untranslatable as exc:
                raise Untranslatable(f"unsupported op: {_op_name(node)} at node {node.name}: {exc}") from None
            if isinstance(env[node], Val) and env[node].op in ("aten", "kernel") and meta is not None:
                env[node].shape = tuple(meta.shape)
            _typed(env[node], meta, node)
    if not isinstance(output, Val) or output.op == "input":
        raise Untranslatable("unsupported model: it must return one computed tensor")
    if output.extra.get("boolean"):
        raise Untranslatable("unsupported dtype: the model returns a torch.bool mask, its kernels write float32")
    return names, output


def _typed(val: Any, meta: Any, node: Any) -> None:
    """Kernels compute float32; int64 indices (argmax) and 0/1 masks (comparisons) are the only exact stand-ins
    for other dtypes. A node whose dtype in PyTorch differs from what its value holds (a mask summed into an
    int64 count, two masks added into a bool) is declined, never returned in the wrong dtype."""
    import torch

    dtype = getattr(meta, "dtype", None)
    if not isinstance(val, Val) or dtype is None:
        return
    holds = torch.int64 if val.integer else torch.bool if val.extra.get("boolean") else torch.float32
    if dtype != holds:
        raise Untranslatable(f"unsupported dtype: {_op_name(node)} at node {node.name} gives {dtype}, "
                             f"its kernel value {holds}")


def _constant(gm: Any, target: str, anchor: str | None) -> Val:
    """A tensor the forward builds from a Python number (torch.tensor(0.5)): fx keeps it on the traced
    module, which ModelNew is not; a one-element one is rebuilt on the input's device."""
    value = getattr(gm, target)
    if value.numel() != 1 or anchor is None:
        raise Untranslatable(f"unsupported constant: {target} of shape {tuple(value.shape)}")
    return Val("input", tuple(value.shape), ref=f"{anchor}.new_full({tuple(value.shape)}, {float(value.item())!r})")


def _placeholder(node: Any, anchor: str | None) -> Val:
    """A forward argument. Kernels read float32: a bool mask is converted (exactly), an int64 tensor too,
    marked integer so that only ops that use it as an index accept it; a float scalar becomes a 0-d tensor."""
    import torch

    meta = node.meta.get("tensor_meta")
    if meta is None:
        if node.meta.get("type") in (float, int) and anchor is not None:
            return Val("input", (), ref=f"{anchor}.new_full((), float({node.name}))")
        raise Untranslatable(f"unsupported input dtype: {node.name} is {node.meta.get('type', 'not a tensor')}")
    shape = tuple(meta.shape)
    if meta.dtype == torch.float32:
        return Val("input", shape, ref=node.name)
    if meta.dtype == torch.bool:
        return Val("input", shape, ref=f"{node.name}.float()")
    if meta.dtype == torch.int64 and meta.shape.numel() < 2 ** 31:
        return Val("input", shape, ref=f"{node.name}.float()", integer=True)
    raise Untranslatable(f"unsupported input dtype: {node.name} is {meta.dtype}")


def _resolve(value: Any, env: dict[Any, Any]) -> Any:
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return env[value]
    if isinstance(value, tuple | list):
        return type(value)(_resolve(v, env) for v in value)
    if isinstance(value, dict):
        return {k: _resolve(v, env) for k, v in value.items()}
    if isinstance(value, slice):  # x[:, :n] with n read from a shape
        return slice(_resolve(value.start, env), _resolve(value.stop, env), _resolve(value.step, env))
    return value


def _op_name(node: Any) -> str:
    if node.op == "call_method":
        return f"torch.Tensor.{node.target}"
    if node.op == "call_module":
        return f"torch.nn.{type(node.graph.owning_module.get_submodule(node.target)).__name__}"
    from torch.fx.node import _get_qualified_name

    if node.target is builtins.getattr:
        return f"torch.Tensor.{node.args[1]}"
    try:
        return _get_qualified_name(node.target)
    except Exception:
        return repr(node.target)
