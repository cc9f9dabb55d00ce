"""Max and average pooling over the last 1-3 dims (nn.MaxPool*d / nn.AvgPool*d), one output per thread.

Window sizes, strides, padding and dilation are the module's (fixed hyperparameters); every tensor
size is read at run time, so the kernel fits the smoke-scaled task as well as the full-size one.
Leading dims (batch, channels) are flattened into planes; indexing is 64-bit, its divisions 32-bit where they fit.
"""

from __future__ import annotations

from typing import Any

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val
from hipforge.translate.kernels.common import Kernel, grid_for
from hipforge.translate.params import GenParams

DEVICE = """__global__ void %(name)s_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t total,
                                  int64_t I0, int64_t I1, int64_t I2, int64_t O0, int64_t O1, int64_t O2) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest, o0, o1, o2, plane;
        hf_divmod(i, O2, rest, o2);
        hf_divmod(rest, O1, rest, o1);
        hf_divmod(rest, O0, plane, o0);
        const float* xp = x + plane * I0 * I1 * I2;
        const int64_t s0 = o0 * %(s0)d - %(p0)d, s1 = o1 * %(s1)d - %(p1)d, s2 = o2 * %(s2)d - %(p2)d;
        float acc = %(init)s;
        int64_t count = 0;
        for (int k0 = 0; k0 < %(k0)d; ++k0) {
            const int64_t a = s0 + (int64_t)k0 * %(d0)d;
            if (a < 0 || a >= I0) continue;
            for (int k1 = 0; k1 < %(k1)d; ++k1) {
                const int64_t b = s1 + (int64_t)k1 * %(d1)d;
                if (b < 0 || b >= I1) continue;
                for (int k2 = 0; k2 < %(k2)d; ++k2) {
                    const int64_t c = s2 + (int64_t)k2 * %(d2)d;
                    if (c < 0 || c >= I2) continue;
                    const float v = xp[(a * I1 + b) * I2 + c];
                    %(step)s
                    ++count;
                }
            }
        }
        %(finish)s
    }
}
"""
MAX = {"init": "-INFINITY", "step": "acc = (v > acc || v != v) ? v : acc;  // NaN propagates, as in torch",
       "finish": "y[i] = acc;"}
# avg: count_include_pad divides by the window clipped to the padded input, else by the in-bounds count
AVG_PAD = "(std::min<int64_t>(s%(d)d + %(k)d, I%(d)d + %(p)d) - s%(d)d)"


def _triple(value: Any, n: int, fill: int) -> list[int]:
    """A pooling parameter for the last n dims, as three values (the leading ones neutral)."""
    values = list(value) if isinstance(value, tuple | list) else [value] * n
    if len(values) != n or not all(isinstance(v, int) for v in values):
        raise Untranslatable(f"pooling parameter {value!r}")
    return [fill] * (3 - n) + values


# the functional forms' parameters after the input, in their positional order (not the modules')
POOL_ARGS = {"Max": ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"),
             "Avg": ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")}


def functional_pools() -> dict[Any, Any]:
    """F.max_pool{1,2,3}d and F.avg_pool{1,2,3}d, lowered as the nn module with the same arguments."""
    import torch.nn as nn
    import torch.nn.functional as F

    def lower(kind: str, n: int):  # noqa: ANN202
        def call(x: Val, *args: Any, **kwargs: Any) -> Val:
            named = dict(zip(POOL_ARGS[kind][:len(args)], args, strict=True))  # more args: ValueError, declined
            return pool(getattr(nn, f"{kind}Pool{n}d")(**named, **kwargs), x)
        return call
    return {getattr(F, f"{kind.lower()}_pool{n}d"): lower(kind, n) for kind in POOL_ARGS for n in (1, 2, 3)}


def pool(module: Any, x: Val) -> Val:
    """nn.MaxPool{1,2,3}d / nn.AvgPool{1,2,3}d as a standalone kernel value."""
    kind = type(module).__name__
    n = int(kind[-2])
    is_max = kind.startswith("Max")
    if is_max and module.return_indices:
        raise Untranslatable(f"{kind} with return_indices")
    if not is_max and getattr(module, "divisor_override", None) is not None:
        raise Untranslatable(f"{kind} with divisor_override")
    k = _triple(module.kernel_size, n, 1)
    s = _triple(module.stride if module.stride is not None else module.kernel_size, n, 1)
    p = _triple(module.padding, n, 0)
    d = _triple(module.dilation, n, 1) if is_max else [1, 1, 1]
    spatial = x.shape[-n:]
    out = []
    for size, kk, ss, pp, dd in zip(spatial, k[3 - n:], s[3 - n:], p[3 - n:], d[3 - n:], strict=True):
        span = size + 2 * pp - dd * (kk - 1) - 1
        o = (-(-span // ss) if module.ceil_mode else span // ss) + 1
        if module.ceil_mode and (o - 1) * ss >= size + pp:  # the last window must start inside the input
            o -= 1
        out.append(o)
    config = {"k": k, "s": s, "p": p, "d": d, "n": n, "max": is_max, "ceil": bool(module.ceil_mode),
              "include_pad": bool(getattr(module, "count_include_pad", True))}
    return Val("kernel", x.shape[:-n] + tuple(out), (x,), fn="pool", extra={"pool": config, "build": pool_kernel})


def pool_kernel(name: str, v: Val, params: GenParams) -> Kernel:
    c = v.extra["pool"]
    n, k, s, p, d = c["n"], c["k"], c["s"], c["p"], c["d"]
    subst = {"name": name, **{f"{key}{i}": c[key][i] for key in "kspd" for i in range(3)}}
    if c["max"]:
        subst.update(MAX)
    else:
        divisor = " * ".join(AVG_PAD % {"d": i, "k": k[i], "p": p[i]} for i in range(3)) if c["include_pad"] \
            else "count"
        subst.update(init="0.0f", step="acc += v;", finish=f"y[i] = acc / (float)({divisor});")
    (x,) = v.args
    dims = [f"X.size({i - 3})" if i >= 3 - n else "(int64_t)1" for i in range(3)]
    host = [f"torch::Tensor {name}(torch::Tensor x) {{",
            "    auto X = x.contiguous();",
            *(f"    const int64_t I{i} = {dims[i]};" for i in range(3))]
    for i in range(3):
        if i < 3 - n:
            host.append(f"    const int64_t O{i} = 1;")
            continue
        span = f"(I{i} + {2 * p[i]} - {d[i] * (k[i] - 1)} - 1)"
        if c["ceil"]:
            host += [f"    int64_t O{i} = ({span} + {s[i] - 1}) / {s[i]} + 1;",
                     f"    if ((O{i} - 1) * {s[i]} >= I{i} + {p[i]}) --O{i};"]
        else:
            host.append(f"    const int64_t O{i} = {span} / {s[i]} + 1;")
    host += ["    auto shape = X.sizes().vec();",
             *(f"    shape[shape.size() - {n - i}] = O{3 - n + i};" for i in range(n)),
             "    auto Y = torch::empty(shape, X.options());",
             "    const int64_t total = Y.numel();",
             "    if (total == 0) return Y;",
             f"    const int blocks = {grid_for('total', params.block_size * params.elems_per_thread)};",
             f"    {name}_kernel<<<blocks, {params.block_size}>>>(X.data_ptr<float>(), Y.data_ptr<float>(), total, "
             "I0, I1, I2, O0, O1, O2);",
             "    return Y;", "}"]
    return Kernel(name, DEVICE % subst + "\n" + "\n".join(host) + "\n", (x,))
