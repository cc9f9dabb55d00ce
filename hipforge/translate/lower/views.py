"""Views, reshapes and copies that stay in PyTorch: reshape/view, permute, basic indexing, narrow, select,
expand, unfold, split/chunk/unbind, cat, the *_like fills and torch.tensor(number, device=x.device). The
kernels read them through .contiguous(); their sizes are written over the tensors they come from (ir/sizes.py),
so they hold at any problem size."""

from __future__ import annotations

import math
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.sizes import Size, render, shape_of
from hipforge.translate.ir.values import Val, topo


def picker(fallback: Any) -> Any:
    """getitem/getattr: sizes of a tensor (x.shape, then an item of it), a tensor indexed by ints and
    slices (a view), else the table's own."""
    def pick(obj: Any, key: Any) -> Any:
        if isinstance(obj, Val) and key == "shape":
            return shape_of(obj)
        if isinstance(obj, Val) and key == "device":  # torch.tensor(0.0, device=x.device)
            return DeviceOf(obj)
        if isinstance(obj, tuple) and (isinstance(key, int) or all(isinstance(d, Size) for d in obj)):
            # x.shape[k], x.shape[1:], a piece of x.split(...)
            return obj[key]
        if isinstance(obj, Val) and not isinstance(key, str):
            return index(obj, key)
        return fallback(obj, key)
    return pick


class DeviceOf:
    """x.device: where a tensor the forward builds (torch.tensor(0.0, device=x.device)) goes."""

    def __init__(self, x: Val) -> None:
        self.x = x


def scalar_tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Val:
    """torch.tensor(number, device=x.device): a 0-d float32 tensor the forward builds on x's device."""
    import torch

    number = isinstance(data, int | float) and not isinstance(data, bool | Size)
    if not number or dtype not in (None, torch.float32) or isinstance(data, int) and dtype is None:
        raise Untranslatable("torch.tensor of something other than a float32 number")
    if not isinstance(device, DeviceOf):
        raise Untranslatable("torch.tensor placed other than on an input's device")
    # one device for the whole forward: built from a tensor the forward already has, it waits on no kernel
    anchor = next(v for v in topo(device.x) if v.op == "input")
    return Val("input", (), ref=f"{anchor.ref}.new_full((), {float(data)!r})")


def index(x: Val, key: Any) -> Val:
    """x[0], x[:, -1], x[..., :n, None]: basic indexing is a view; a tensor or a list as index is not."""
    items = key if isinstance(key, tuple) else (key,)
    sources: list[Val] = [x]
    parts = []
    for item in items:
        if isinstance(item, slice):
            bounds = ["" if b is None else render([b], sources)[0] for b in (item.start, item.stop, item.step)]
            parts.append(":".join(bounds if item.step is not None else bounds[:2]))
        elif item is None or item is Ellipsis:
            parts.append("None" if item is None else "...")
        elif isinstance(item, int) and not isinstance(item, bool):
            parts.append(render([item], sources)[0])
        else:
            what = "a tensor" if isinstance(item, Val) else "a list" if isinstance(item, list) else type(item).__name__
            raise Untranslatable(f"indexing by {what}: a gather, not a view (only ints, slices, None and ...)")
    return view(x, x.shape, "{0}[" + ", ".join(parts) + "]", *sources[1:])


def permute(x: Val, *dims: Any) -> Val:
    order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], tuple | list) else dims
    return view(x, x.shape, f"{{0}}.permute{tuple(int(d) for d in order)}")


def view(x: Val, shape: tuple[int, ...], call: str, *sources: Val, **extra: Any) -> Val:
    """A PyTorch view of x, which keeps x's dtype: an int64 index stays integer, a 0/1 mask boolean."""
    flags = {"boolean": True} if x.extra.get("boolean") else {}
    return Val("aten", tuple(shape), (x, *sources), fn=call, kind="view", integer=x.integer, extra={**flags, **extra})


def cat(tensors: Any, dim: int = 0) -> Val:
    """torch.cat stays in PyTorch (a copy with no math to fuse); what reads or feeds it fuses as usual."""
    parts = list(tensors)
    if not parts or not all(isinstance(t, Val) for t in parts):
        raise Untranslatable("torch.cat of something other than tensors")
    slots = ", ".join(f"{{{k}}}" for k in range(len(parts)))
    return Val("aten", (), tuple(parts), fn=f"torch.cat([{slots}], dim={int(dim)})", kind="cat")


def _dims(x: Val, dim: Any) -> list[int]:
    rank = max(len(x.shape), 1)
    return sorted({d % rank for d in (dim if isinstance(dim, tuple | list) else [dim])})


def unsqueeze(x: Val, dim: int) -> Val:
    dim %= len(x.shape) + 1
    return view(x, x.shape[:dim] + (1,) + x.shape[dim:], f"{{0}}.unsqueeze({dim})")


def squeeze(x: Val, dim: Any = None) -> Val:
    dims = [k for k, s in enumerate(x.shape) if s == 1] if dim is None else _dims(x, dim)
    dims = [d for d in dims if x.shape[d] == 1]  # squeezing a dim that is not 1 leaves it
    if not dims:
        return x
    return view(x, tuple(s for k, s in enumerate(x.shape) if k not in dims), f"{{0}}.squeeze({tuple(dims)})")


def flatten(x: Val, start_dim: int = 0, end_dim: int = -1) -> Val:
    if not x.shape:
        return view(x, (1,), "{0}.reshape(1)")
    a, b = start_dim % len(x.shape), end_dim % len(x.shape)
    shape = x.shape[:a] + (math.prod(x.shape[a:b + 1]),) + x.shape[b + 1:]
    return view(x, shape, f"{{0}}.flatten({a}, {b})")


def reshape(x: Val, *shape: Any) -> Val:
    """A reshape written over the sizes it is given when they were read from tensors (view(b, t, heads, e // heads)),
    else over the input's own sizes (merged dims, inserted or dropped 1s), so it holds at any problem size; a
    split to plain numbers is declined, as those may be a problem size taken at its full value."""
    target = list(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape)
    if not all(isinstance(s, int) for s in target):
        raise Untranslatable("a reshape to sizes computed at run time")
    if any(isinstance(s, Size) for s in target):  # sizes read from tensors, and the model's own constants
        sources = [x]
        exprs = render(target, sources)
        known = math.prod(s for s in target if s != -1)
        full = tuple(int(s) if s != -1 else math.prod(x.shape) // known for s in target)
        return view(x, full, "{0}.reshape(" + ", ".join(exprs) + ("," if len(exprs) == 1 else "") + ")",
                    *sources[1:])
    if -1 in target:
        known = math.prod(s for s in target if s != -1)
        target[target.index(-1)] = math.prod(x.shape) // max(known, 1)
    exprs, k = [], 0
    for want in target:
        while k < len(x.shape) and x.shape[k] == 1 and want != 1:
            k += 1
        if want == 1 and (k >= len(x.shape) or x.shape[k] != 1):
            exprs.append("1")
            continue
        start, product = k, 1
        while k < len(x.shape) and product < want:
            product *= x.shape[k]
            k += 1
        if product != want or k == start:
            raise Untranslatable(f"a reshape of {x.shape} to {tuple(target)} that splits a dim")
        exprs.append(" * ".join(f"{{0}}.shape[{d}]" for d in range(start, k)))
    if any(s != 1 for s in x.shape[k:]):
        raise Untranslatable(f"a reshape of {x.shape} to {tuple(target)}")
    return view(x, tuple(target), "{0}.reshape(" + ", ".join(exprs) + ("," if len(exprs) == 1 else "") + ")")


def narrow(x: Val, dim: int, start: int, length: int) -> Val:
    d = _dims(x, dim)[0]
    begin, span = render([start, length], sources := [x])
    return view(x, x.shape, f"{{0}}.narrow({d}, {begin}, {span})", *sources[1:])


def select(x: Val, dim: int, index: int) -> Val:
    d = _dims(x, dim)[0]
    at = render([index], sources := [x])[0]
    return view(x, x.shape, f"{{0}}.select({d}, {at})", *sources[1:])


def expand(x: Val, *sizes: Any) -> Val:
    target = list(sizes[0] if len(sizes) == 1 and isinstance(sizes[0], tuple | list) else sizes)
    if any(s not in (-1, 1) and not isinstance(s, Size) for s in target):
        raise Untranslatable("an expand to plain numbers (only sizes read from tensors or the model's, -1 and 1)")
    exprs = render(target, sources := [x])
    return view(x, x.shape, "{0}.expand(" + ", ".join(exprs) + ("," if len(exprs) == 1 else "") + ")",
                *sources[1:])


def unfold(x: Val, dim: int, size: int, step: int) -> Val:
    width, stride = render([size, step], sources := [x])
    return view(x, x.shape, f"{{0}}.unfold({_dims(x, dim)[0]}, {width}, {stride})", *sources[1:])


def unbind(x: Val, dim: int = 0) -> tuple[Val, ...]:
    d = _dims(x, dim)[0]
    return tuple(view(x, x.shape, f"{{0}}.unbind({d})[{k}]") for k in range(x.shape[d]))


def pieces(method: str):
    """split/chunk: a tuple of views, each written as the same call and an index."""
    def lowered(x: Val, arg: Any, dim: int = 0) -> tuple[Val, ...]:
        import torch

        d, sources = _dims(x, dim)[0], [x]
        if isinstance(arg, tuple | list):
            written, arg = "[" + ", ".join(render(arg, sources)) + "]", [int(a) for a in arg]
        else:
            written, arg = render([arg], sources)[0], int(arg)
        count = len(getattr(torch.empty(x.shape, device="meta"), method)(arg, d))
        return tuple(view(x, x.shape, f"{{0}}.{method}({written}, {d})[{k}]", *sources[1:]) for k in range(count))
    return lowered


def filled(value: float):
    """zeros_like/ones_like: a new tensor in PyTorch, of x's size at run time."""
    def lowered(x: Val, *, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
                memory_format: Any = None, requires_grad: bool = False) -> Val:
        if dtype is not None:
            raise Untranslatable("a *_like fill with a dtype")
        return Val("aten", x.shape, (x,), fn=f"torch.full_like({{0}}, {value!r})", kind="fill")
    return lowered


def view_tables() -> tuple[dict[Any, Any], dict[str, Any]]:
    import torch

    methods: dict[str, Any] = {
        "unsqueeze": unsqueeze, "squeeze": squeeze, "flatten": flatten, "view": reshape, "reshape": reshape,
        "permute": permute, "narrow": narrow, "select": select, "expand": expand, "unfold": unfold,
        "split": pieces("split"), "chunk": pieces("chunk"), "unbind": unbind,
    }
    functions: dict[Any, Any] = {getattr(torch, name): fn for name, fn in methods.items()
                                 if hasattr(torch, name) and name not in ("view", "expand", "unfold")}
    functions.update({torch.cat: cat, torch.concat: cat, torch.concatenate: cat,
                      torch.zeros_like: filled(0.0), torch.ones_like: filled(1.0), torch.tensor: scalar_tensor})
    return functions, methods
