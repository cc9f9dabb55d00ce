"""Matrix products, which stay in ATen (or become the tiled GEMM of kernels/gemm.py when a model is one
product): matmul, bmm, linear, the einsum forms that are one, scaled dot-product attention around two of them,
triu/tril of one; and transpose, the view they are often taken through."""

from __future__ import annotations

from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val, number
from hipforge.translate.lower import ops
from hipforge.translate.lower.views import view


def transpose(x: Val, a: int, b: int) -> Val:
    return view(x, x.shape, f"{{0}}.transpose({a}, {b})", dims=(a, b))


def matmul(a: Val, b: Val) -> Val:
    kind = "matmul" if len(a.shape) == 2 and len(b.shape) == 2 else "bmm"
    return Val("aten", (), (a, b), fn="torch.matmul({0}, {1})", kind=kind)


def bmm(a: Val, b: Val) -> Val:
    return Val("aten", (), (a, b), fn="torch.bmm({0}, {1})", kind="bmm")


def linear(x: Val, weight: Val, bias: Val | None = None) -> Val:
    operands = (x, weight) + ((bias,) if bias is not None else ())
    call = "F.linear({0}, {1}, {2})" if bias is not None else "F.linear({0}, {1})"
    return Val("aten", (), operands, fn=call, kind="linear")


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
    if len(operands) == 1 and isinstance(operands[0], tuple | list):
        operands = tuple(operands[0])
    terms = equation.replace(" ", "").split("->")
    lhs = terms[0].split(",") if len(terms) == 2 else []
    if len(lhs) == 2 and len(operands) == 2 and len(set(lhs[0])) == len(lhs[0]):
        a, b, out = lhs[0], lhs[1], terms[1]
        if len(b) == 2 and a[-1] == b[0] and b[1] not in a and out == a[:-1] + b[1]:
            return matmul(*operands)
        if len(a) == len(b) == 3 and a[0] == b[0] and a[2] == b[1] and out == a[:2] + b[2] and len(set(a + b)) == 4:
            return bmm(*operands)
    raise Untranslatable(f"einsum {equation!r} (only matrix-product forms)")


def attention(q: Val, k: Val, v: Val, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
              scale: float | None = None, enable_gqa: bool = False) -> Val:
    """softmax(q @ k^T * scale) @ v: the two products in ATen, the scaled softmax a HIP row kernel. The
    default scale 1/sqrt(E) is read from q at run time (E changes with the problem size)."""
    if attn_mask is not None or dropout_p or is_causal or enable_gqa or q.op != "input":
        raise Untranslatable("scaled_dot_product_attention with a mask, dropout, causality or a computed query")
    default = Val("input", (), ref=f"{q.ref}.new_full((), {q.ref}.shape[-1] ** -0.5)")
    factor = default if scale is None else number(scale)
    scores = matmul(q, transpose(k, -2, -1))
    scores.shape = q.shape[:-1] + (k.shape[-2],)
    probs = ops.softmax(ops.binary("mul", scores, factor), -1)
    out = matmul(probs, v)
    out.shape = q.shape[:-1] + (v.shape[-1],)
    return out
