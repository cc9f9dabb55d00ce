"""What each PyTorch op becomes: C templates of elementwise ops and expansions of composite ones."""

from __future__ import annotations

import operator
from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Scalar, Val, c_value, ew, lit, number, reduce
from hipforge.translate.kernels.two_stage_reduce import CUT_ROWS, splits

UNARY = {  # C expressions over {0}; operands are always variables or literals, so repeats are cheap
    "relu": "fmaxf({0}, 0.0f)",
    "sigmoid": "1.0f / (1.0f + expf(-{0}))",
    "tanh": "tanhf({0})",
    "exp": "expf({0})",
    "log": "logf({0})",
    "abs": "fabsf({0})",
    "neg": "(-{0})",
    "sqrt": "sqrtf({0})",
    "rsqrt": "rsqrtf({0})",
    "square": "({0} * {0})",
    "silu": "({0} / (1.0f + expf(-{0})))",
    "gelu": "(0.5f * {0} * (1.0f + erff({0} * 0.7071067811865476f)))",
    "gelu_tanh": "(0.5f * {0} * (1.0f + tanhf(0.7978845608028654f * ({0} + 0.044715f * {0} * {0} * {0}))))",
    "hardswish": "({0} * fminf(fmaxf({0} + 3.0f, 0.0f), 6.0f) / 6.0f)",
    "mish": "({0} * tanhf({0} > 20.0f ? {0} : log1pf(expf({0}))))",
    "relu6": "fminf(fmaxf({0}, 0.0f), 6.0f)",
    "hardsigmoid": "(fminf(fmaxf({0} + 3.0f, 0.0f), 6.0f) / 6.0f)",
    "selu": "(1.0507009873554805f * ({0} > 0.0f ? {0} : 1.6732632423543772f * expm1f({0})))",
    "softsign": "({0} / (1.0f + fabsf({0})))",
    "sign": "(float)(({0} > 0.0f) - ({0} < 0.0f))",
    "log1p": "log1pf({0})",
    "expm1": "expm1f({0})",
    "sin": "sinf({0})",
    "cos": "cosf({0})",
    "reciprocal": "(1.0f / {0})",
}
BINARY = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": "({0} / {1})",
    "maximum": "fmaxf({0}, {1})",
    "minimum": "fminf({0}, {1})",
    "pow": "powf({0}, {1})",
}


def unary(name: str, x: Val) -> Val:
    if name == "neg" and isinstance(x, Scalar):  # -self.bound: still the model's, at run time
        return Scalar(-float(x), f"(-{x.expr})", x.anchor)
    return ew(UNARY[name], x)


SCALAR_OPS = {"add": ("+", operator.add), "sub": ("-", operator.sub), "mul": ("*", operator.mul),
              "div": ("/", operator.truediv), "pow": ("**", operator.pow)}


def binary(name: str, a: Any, b: Any, alpha: float = 1.0) -> Any:
    if isinstance(alpha, Scalar) or alpha != 1.0:  # torch.add(a, b, alpha=...)
        b = binary("mul", b, number(alpha))
    if not isinstance(a, Val) and not isinstance(b, Val) and name in SCALAR_OPS \
            and (isinstance(a, Scalar) or isinstance(b, Scalar)):  # 1.0 / self.scale: Python at run time
        symbol, op = SCALAR_OPS[name]
        return Scalar(float(op(float(a), float(b))), f"({_py(a)} {symbol} {_py(b)})",
                      (a if isinstance(a, Scalar) else b).anchor)
    if name == "pow" and not isinstance(b, Val):
        return power(a, number(b))
    if not isinstance(a, Val) and not isinstance(b, Val):
        raise Untranslatable(f"{name} of two constants (a size read from a tensor, e.g. x.size(1) - 1, is fixed "
                             "at the full problem size)")
    return ew(BINARY[name], a, b)


def _py(v: Any) -> str:
    return v.expr if isinstance(v, Scalar) else repr(float(v))


def power(x: Val, exponent: float) -> Val:
    if isinstance(exponent, Scalar):
        return ew("powf({0}, {1})", x, exponent)
    small = {1.0: "{0}", 2.0: "({0} * {0})", 3.0: "({0} * {0} * {0})", 0.5: "sqrtf({0})", -1.0: "(1.0f / {0})"}
    return ew(small.get(exponent, "powf({0}, " + lit(exponent) + ")"), x)


# Parameters below are literals, or Scalars (the model's own floats) that become operands {1}, {2}, ...
def leaky_relu(x: Val, slope: float = 0.01) -> Val:
    operands = [x]
    return ew("({0} > 0.0f ? {0} : " + c_value(slope, operands) + " * {0})", *operands)


def elu(x: Val, alpha: float = 1.0) -> Val:
    operands = [x]
    return ew("({0} > 0.0f ? {0} : " + c_value(alpha, operands) + " * expm1f({0}))", *operands)


def softplus(x: Val, beta: float = 1.0, threshold: float = 20.0) -> Val:
    operands = [x]
    b, t = c_value(beta, operands), c_value(threshold, operands)  # torch: linear where beta * x > threshold
    return ew(f"({{0}} * {b} > {t} ? {{0}} : log1pf(expf({{0}} * {b})) / {b})", *operands)


def clamp(x: Val, lo: float | None = None, hi: float | None = None) -> Val:
    if isinstance(lo, Val) or isinstance(hi, Val):
        raise Untranslatable("clamp with tensor bounds")
    expr, operands = "{0}", [x]
    if lo is not None:
        expr = f"fmaxf({expr}, {c_value(lo, operands)})"
    if hi is not None:
        expr = f"fminf({expr}, {c_value(hi, operands)})"
    return ew(expr, *operands)


def gelu(x: Val, approximate: str = "none") -> Val:
    return unary("gelu_tanh" if approximate == "tanh" else "gelu", x)


def softmax(x: Val, dim: int | None, log: bool = False) -> Val:
    if dim is None:  # torch's legacy implicit dim
        raise Untranslatable("softmax without an explicit dim")
    shifted = binary("sub", x, reduce(x, "max", dim, True))
    total = reduce(unary("exp", shifted), "sum", dim, True)
    return binary("sub", shifted, unary("log", total)) if log else binary("div", unary("exp", shifted), total)


def layer_norm(x: Val, normalized_shape: Any, weight: Val | None, bias: Val | None, eps: float) -> Val:
    k = len(tuple(normalized_shape))
    centered, var = centered_and_var(x, tuple(range(len(x.shape) - k, len(x.shape))))
    y = binary("mul", centered, unary("rsqrt", binary("add", var, number(eps))))
    y = binary("mul", y, weight) if weight is not None else y
    return binary("add", y, bias) if bias is not None else y


def centered_and_var(x: Val, dims: tuple[int, ...]) -> tuple[Val, Val]:
    """x - mean and the biased variance over `dims` (non-negative, sorted). Over one run of adjacent dims,
    not all of them, the row kernel takes mean and variance in one Welford pass. Otherwise (separate
    dims, or rows too few and long for a block each, as kernels/two_stage_reduce.py decides) the variance is the mean of
    squared deviations, taken after the mean, over an x - mean of its own that no kernel has to store."""
    mean = reduce(x, "mean", dims, True)
    if list(dims) == list(range(dims[0], dims[-1] + 1)) and len(dims) < len(x.shape):
        var = reduce(x, "var", dims, True)
        if not splits(var, CUT_ROWS):
            return binary("sub", x, mean), var
    return binary("sub", x, mean), reduce(unary("square", binary("sub", x, mean)), "mean", dims, True)


def normalize_over(x: Val, dims: tuple[int, ...], weight: Val | None, bias: Val | None, eps: float) -> Val:
    """(x - mean) / sqrt(biased var + eps) over `dims`, then a per-channel (dim 1) affine: batch/instance norm."""
    centered, var = centered_and_var(x, dims)
    y = binary("mul", centered, unary("rsqrt", binary("add", var, number(eps))))
    channel = (x.shape[1],) + (1,) * (len(x.shape) - 2)
    y = binary("mul", y, as_shape(weight, channel)) if weight is not None else y
    return binary("add", y, as_shape(bias, channel)) if bias is not None else y


def logsumexp(x: Val, dim: Any, keepdim: bool = False) -> Val:
    """max + log(sum(exp(x - max))), the max taken as 0 where it is infinite, as torch does."""
    top = ew("(fabsf({0}) == INFINITY ? 0.0f : {0})", reduce(x, "max", dim, True))
    total = reduce(unary("exp", binary("sub", x, top)), "sum", dim, True)
    out = binary("add", unary("log", total), top)
    if keepdim:
        return out
    dims = set(range(len(x.shape))) if dim is None else {d % len(x.shape) for d in
                                                         (dim if isinstance(dim, tuple | list) else [dim])}
    return Val("aten", tuple(s for k, s in enumerate(out.shape) if k not in dims), (out,),
               fn=f"{{0}}.squeeze({tuple(sorted(dims))})", kind="view")


def norm(x: Val, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Val:
    if p in ("fro", 2, 2.0):
        return unary("sqrt", reduce(unary("square", x), "sum", dim, keepdim))
    if p in (1, 1.0):
        return reduce(unary("abs", x), "sum", dim, keepdim)
    if p in (float("inf"), "inf"):
        return reduce(unary("abs", x), "max", dim, keepdim)
    raise Untranslatable(f"norm with p={p!r}")


def batch_norm_inference(x: Val, mean: Val, var: Val, weight: Val | None, bias: Val | None, eps: float) -> Val:
    """Inference batch norm: per-channel affine; the (C,) statistics broadcast along dim 1."""
    channel = (x.shape[1],) + (1,) * (len(x.shape) - 2)
    per_channel = [as_shape(p, channel) if p is not None else None for p in (mean, var, weight, bias)]
    mean, var, weight, bias = per_channel
    y = binary("mul", binary("sub", x, mean), unary("rsqrt", binary("add", var, number(eps))))
    y = binary("mul", y, weight) if weight is not None else y
    return binary("add", y, bias) if bias is not None else y


def normalize(x: Val, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Val:
    if p != 2.0:
        raise Untranslatable(f"normalize with p={p}")
    norm = unary("sqrt", reduce(unary("square", x), "sum", dim, True))
    operands = [norm]
    return binary("div", x, ew("fmaxf({0}, " + c_value(eps, operands) + ")", *operands))


def as_shape(v: Val, shape: tuple[int, ...]) -> Val:
    """The same contiguous parameter seen with another broadcasting shape, e.g. (C,) as (C, 1, 1)."""
    if v.op != "input":
        raise Untranslatable("a per-channel operand that is not a parameter")
    return Val("input", shape, ref=v.ref)


def loss(elementwise: Val, reduction: str) -> Val:
    if reduction == "none":
        return elementwise
    if reduction not in ("mean", "sum", "batchmean"):
        raise Untranslatable(f"reduction={reduction!r}")
    return reduce(elementwise, reduction, None, False)


def smooth_l1(x: Val, y: Val, beta: float, reduction: str) -> Val:
    diff = unary("abs", binary("sub", x, y))
    if beta == 0.0:
        return loss(diff, reduction)
    operands = [diff]
    b = c_value(beta, operands)
    return loss(ew(f"({{0}} < {b} ? 0.5f * {{0}} * {{0}} / {b} : {{0}} - 0.5f * {b})", *operands), reduction)


def cosine_similarity(x1: Val, x2: Val, dim: int = 1, eps: float = 1e-8) -> Val:
    """As ATen: each operand divided by its norm clamped to eps, then the dot product."""
    def unit(x: Val) -> Val:
        norm = unary("sqrt", reduce(unary("square", x), "sum", dim, True))
        operands = [norm]
        return binary("div", x, ew("fmaxf({0}, " + c_value(eps, operands) + ")", *operands))
    if x1.shape != x2.shape:
        raise Untranslatable("cosine_similarity of broadcast operands")
    return reduce(binary("mul", unit(x1), unit(x2)), "sum", dim, False)


def kl_div(log_p: Val, target: Val, reduction: str, log_target: bool) -> Val:
    """target * (log target - log_p), 0 where target is 0 (xlogy), as F.kl_div."""
    if log_target:
        return loss(binary("mul", unary("exp", target), binary("sub", target, log_p)), reduction)
    return loss(ew("({1} > 0.0f ? {1} * (logf({1}) - {0}) : -{1} * {0})", log_p, target), reduction)
