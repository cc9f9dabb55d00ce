"""More of torch's namespace for the translator: views and reshapes, norms, logsumexp, products,
activations without a Tensor method. Merged into tables.tables()."""

from __future__ import annotations

import math
from typing import Any

from hipforge.agents.translate import ops
from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.hip_loss import cross_entropy, triplet_margin
from hipforge.agents.translate.hip_norm import dropout, functional_norms
from hipforge.agents.translate.hip_pool import functional_pools
from hipforge.agents.translate.hip_scan import flip, scan
from hipforge.agents.translate.ir import Val, reduce


class Dim(int):
    """A size read from a tensor (x.shape[k], x.size(k)): its full-size value, and where it comes from,
    so that a reshape to it is written over that tensor and holds at any problem size."""

    src: Val
    index: int

    def __new__(cls, src: Val, index: int) -> Dim:
        dim = super().__new__(cls, src.shape[index])
        dim.src, dim.index = src, index
        return dim


def as_number(v: Any) -> Any:
    """A size used as a number (x / x.size(1), math.sqrt(q.shape[-1])) is read at run time, as a 0-d tensor
    the forward builds: a constant taken at the full size would be wrong at any other."""
    if not isinstance(v, Dim):
        return v
    if v.src.op != "input":
        raise Untranslatable("the size of a computed tensor used as a number")
    return Val("input", (), ref=f"{v.src.ref}.new_full((), float({v.src.ref}.size({v.index})))")


def shape_of(x: Val) -> tuple[Dim, ...]:
    return tuple(Dim(x, k) for k in range(len(x.shape)))


def size(x: Val, dim: int | None = None) -> Any:
    return shape_of(x) if dim is None else Dim(x, dim % len(x.shape))


def picker(fallback: Any) -> Any:
    """getitem/getattr: sizes of a tensor (x.shape, then an item of it), else the table's own."""
    def pick(obj: Any, key: Any) -> Any:
        if isinstance(obj, Val) and key == "shape":
            return shape_of(obj)
        if isinstance(obj, tuple) and obj and all(isinstance(d, Dim) for d in obj):
            return obj[key]
        return fallback(obj, key)
    return pick


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
    """A reshape written over the input's own sizes (merged dims, inserted or dropped 1s), so it holds
    at any problem size; one that splits a dim needs a size the model fixes, which is not known here."""
    target = list(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape)
    if not all(isinstance(s, int) for s in target):
        raise Untranslatable("a reshape to sizes computed at run time")
    if any(isinstance(s, Dim) for s in target) and all(isinstance(s, Dim) or s in (1, -1) for s in target):
        sources = list({id(s.src): s.src for s in target if isinstance(s, Dim)}.values())
        exprs = [f"{{{1 + sources.index(s.src)}}}.shape[{s.index}]" if isinstance(s, Dim) else str(s) for s in target]
        known = math.prod(s for s in target if s != -1)
        full = tuple(int(s) if s != -1 else math.prod(x.shape) // known for s in target)
        return view(x, full, "{0}.reshape(" + ", ".join(exprs) + ")", *sources)
    if -1 in target:
        known = math.prod(s for s in target if s != -1)
        target[target.index(-1)] = math.prod(x.shape) // max(known, 1)
    exprs, k = [], 0
    for size in target:
        while k < len(x.shape) and x.shape[k] == 1 and size != 1:
            k += 1
        if size == 1 and (k >= len(x.shape) or x.shape[k] != 1):
            exprs.append("1")
            continue
        start, product = k, 1
        while k < len(x.shape) and product < size:
            product *= x.shape[k]
            k += 1
        if product != size or k == start:
            raise Untranslatable(f"a reshape of {x.shape} to {tuple(target)} that splits a dim")
        exprs.append(" * ".join(f"{{0}}.shape[{d}]" for d in range(start, k)))
    if any(s != 1 for s in x.shape[k:]):
        raise Untranslatable(f"a reshape of {x.shape} to {tuple(target)}")
    return view(x, tuple(target), "{0}.reshape(" + ", ".join(exprs) + ("," if len(exprs) == 1 else "") + ")")


def _prod(x: Val, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Val:
    if dtype is not None:
        raise Untranslatable("prod with a dtype")
    return reduce(x, "prod", dim, keepdim)


def _cumprod(x: Val, dim: int, dtype: Any = None) -> Val:
    if dtype is not None:
        raise Untranslatable("cumprod with a dtype")
    return scan(x, dim, "*")


def triangle(which: str):
    """torch.triu/tril of a matrix product: the GEMM masks its epilogue (in ATen, the same call wraps it)."""
    def lowered(x: Val, diagonal: int = 0) -> Val:
        if x.op != "aten" or x.kind not in ("matmul", "bmm") or "tri" in x.extra:
            raise Untranslatable(f"torch.{which} of something other than a matrix product")
        return Val("aten", x.shape, x.args, fn=f"torch.{which}({x.fn}, {diagonal})", kind=x.kind,
                   extra={**x.extra, "tri": (which, diagonal)})
    return lowered


def einsum(equation: str, *operands: Any) -> Val:
    """The einsum forms that are a matrix product: '...l,lk->...k' (any leading letters) and 'bij,bjk->bik'."""
    from hipforge.agents.translate.tables import _bmm, _matmul

    if len(operands) == 1 and isinstance(operands[0], tuple | list):
        operands = tuple(operands[0])
    terms = equation.replace(" ", "").split("->")
    lhs = terms[0].split(",") if len(terms) == 2 else []
    if len(lhs) == 2 and len(operands) == 2 and len(set(lhs[0])) == len(lhs[0]):
        a, b, out = lhs[0], lhs[1], terms[1]
        if len(b) == 2 and a[-1] == b[0] and b[1] not in a and out == a[:-1] + b[1]:
            return _matmul(*operands)
        if len(a) == len(b) == 3 and a[0] == b[0] and a[2] == b[1] and out == a[:2] + b[2] and len(set(a + b)) == 4:
            return _bmm(*operands)
    raise Untranslatable(f"einsum {equation!r} (only matrix-product forms)")


def attention(q: Val, k: Val, v: Val, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
              scale: float | None = None, enable_gqa: bool = False) -> Val:
    """softmax(q @ k^T * scale) @ v: the two products in ATen, the scaled softmax a HIP row kernel. The
    default scale 1/sqrt(E) is read from q at run time (E changes with the problem size)."""
    from hipforge.agents.translate.tables import _matmul, _transpose

    if attn_mask is not None or dropout_p or is_causal or enable_gqa or q.op != "input":
        raise Untranslatable("scaled_dot_product_attention with a mask, dropout, causality or a computed query")
    factor = Val("input", (), ref=f"{q.ref}.new_full((), {q.ref}.shape[-1] ** -0.5)") if scale is None else float(scale)
    scores = _matmul(q, _transpose(k, -2, -1))
    scores.shape = q.shape[:-1] + (k.shape[-2],)
    probs = ops.softmax(ops.binary("mul", scores, factor), -1)
    out = _matmul(probs, v)
    out.shape = q.shape[:-1] + (v.shape[-1],)
    return out


def more_tables(known: dict[Any, Any]) -> tuple[dict[Any, Any], dict[str, Any]]:
    import builtins
    import operator

    import torch
    import torch.nn.functional as F

    def un(name: str):
        return lambda x, inplace=False: ops.unary(name, x)

    methods: dict[str, Any] = {
        "unsqueeze": unsqueeze, "squeeze": squeeze, "flatten": flatten, "view": reshape, "reshape": reshape,
        "size": size, "flip": flip, "cumprod": _cumprod, "prod": _prod,
        "clone": lambda x, memory_format=None: x, "detach": lambda x: x,
        "logsumexp": lambda x, dim, keepdim=False: ops.logsumexp(x, dim, keepdim),
        "norm": lambda x, p="fro", dim=None, keepdim=False, out=None, dtype=None: ops.norm(x, p, dim, keepdim),
        **{name: un(name) for name in ("sign", "log1p", "expm1", "sin", "cos", "reciprocal")},
    }
    functions: dict[Any, Any] = {getattr(torch, name): fn for name, fn in methods.items() if hasattr(torch, name)}
    functions.update({
        F.elu: lambda x, alpha=1.0, inplace=False: ops.elu(x, alpha), torch.selu: un("selu"), F.selu: un("selu"),
        F.hardsigmoid: un("hardsigmoid"), F.softsign: un("softsign"), torch.einsum: einsum,
        F.scaled_dot_product_attention: attention, math.sqrt: lambda v: ops.unary("sqrt", as_number(v)),
        torch.triu: triangle("triu"), torch.tril: triangle("tril"),
        F.cross_entropy: lambda x, t, weight=None, size_average=None, ignore_index=-100, reduce=None,
        reduction="mean", label_smoothing=0.0: cross_entropy(x, t, weight, size_average, ignore_index, reduce,
                                                             reduction, label_smoothing),
        F.triplet_margin_loss: lambda a, p, n, margin=1.0, p_norm=2.0, eps=1e-6, swap=False, size_average=None,
        reduce=None, reduction="mean": triplet_margin(a, p, n, margin, p_norm, eps, swap, reduction),
        operator.getitem: picker(known[operator.getitem]), builtins.getattr: picker(known[builtins.getattr]),
        torch.cat: cat, torch.concat: cat, torch.concatenate: cat,
        **functional_pools(), **functional_norms(),
        **dict.fromkeys((F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout), dropout),
    })
    return functions, methods
