"""Samplers of the light operators: softmax, pooling, activations, bias/scalar arithmetic, reductions,
clamp, residual add and dropout in eval mode. Numeric parameters become module-level constants that
Model receives through get_init_inputs, as KernelBench does with e.g. ``scaling_factor``."""

from __future__ import annotations

import random

from hipforge.tasks.synth.steps import SPATIAL, Context, Env, Shape, Step, Tensor, keep_shape, need, same

ACTIVATIONS = {
    "relu": "torch.relu({0})",
    "gelu": "F.gelu({0})",
    "silu": "F.silu({0})",
    "tanh": "torch.tanh({0})",
    "sigmoid": "torch.sigmoid({0})",
    "leaky_relu": "F.leaky_relu({0}, negative_slope=0.1)",
    "hardswish": "F.hardswish({0})",
    "mish": "F.mish({0})",
    "elu": "F.elu({0})",
    "softplus": "F.softplus({0})",
}
REDUCTIONS = ("mean", "mean", "amax", "sum")  # mean twice: sums grow large and saturate what follows


def _param(i: int, stem: str, value: float | int) -> tuple[str, tuple, tuple[str, ...]]:
    """A numeric parameter: its constant name, the constant, and the __init__ line storing it."""
    name = f"{stem}_{i}"
    return name, ((name, value),), (f"self.{name} = {name}",)


def softmax(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    dim = {"feat": -1, "image": 1, "volume": 1}.get(x.layout) or rng.choice((-1, 1))
    kind = rng.choice(("softmax", "softmax", "log_softmax"))

    def rule(shapes: list[Shape], env: Env) -> Shape:
        need(shapes[0][dim] >= 2, f"{kind} over a dimension of size {shapes[0][dim]} is constant")
        return shapes[0]

    words = "log-softmax" if kind == "log_softmax" else "softmax"
    return Step(
        "softmax",
        f"{words} over dim {dim}",
        (x.var,),
        f"torch.{kind}({{0}}, dim={dim})",
        same(x, f"h{ctx.index}"),
        rule,
    )


def pool(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    dims, kind = SPATIAL[x.layout], rng.choice(("max", "avg"))
    name, constants, layers = _param(ctx.index, "pool_kernel", 2)

    def rule(shapes: list[Shape], env: Env) -> Shape:
        k, space = int(env[name]), shapes[0][2:]
        need(all(n >= k for n in space), f"a pooling window of {k} does not fit {space}")
        return (*shapes[0][:2], *(n // k for n in space))

    return Step(
        "pool",
        f"{kind} pooling over the {dims} spatial dims with window and stride {name}",
        (x.var,),
        f"F.{kind}_pool{dims}d({{0}}, kernel_size=self.{name})",
        same(x, f"h{ctx.index}"),
        rule,
        constants,
        layers,
    )


def activation(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    kind = rng.choice(sorted(ACTIVATIONS))
    return Step(
        "activation", f"{kind} activation", (x.var,), ACTIVATIONS[kind], same(x, f"h{ctx.index}"), keep_shape
    )


def bias_scale(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    i, kind = ctx.index, rng.choice(("bias", "scale", "shift", "divide"))
    if kind == "bias":
        trail = ", 1" * SPATIAL[x.layout]
        dim = 1 if SPATIAL[x.layout] else -1

        def rule(shapes: list[Shape], env: Env) -> Shape:
            need(shapes[0][dim] == env[x.feature], f"a bias of {env[x.feature]} on {shapes[0]}")
            return shapes[0]

        return Step(
            "bias_scale",
            f"add a learned bias of shape ({x.feature}{trail}) broadcast over the rest",
            (x.var,),
            f"{{0}} + self.bias_{i}",
            same(x, f"h{i}"),
            rule,
            layers=(f"self.bias_{i} = nn.Parameter(torch.randn({x.feature}{trail}) * 0.1)",),
        )
    stem, sign, menu = {
        "scale": ("scale", "*", (0.25, 0.5, 1.5, 2.0)),
        "shift": ("shift", "-", (0.1, 0.5, 1.0)),
        "divide": ("divisor", "/", (2.0, 4.0)),
    }[kind]
    name, constants, layers = _param(i, stem, rng.choice(menu))
    return Step(
        "bias_scale",
        f"{kind} by the scalar {name}",
        (x.var,),
        f"{{0}} {sign} self.{name}",
        same(x, f"h{i}"),
        keep_shape,
        constants,
        layers,
    )


def reduction(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step | None:
    if x.layout == "feat":
        return None
    kind = rng.choice(REDUCTIONS)
    dim, out, what = {
        "volume": ("2", "image", "the depth dim"),
        "image": ("(2, 3)", "feat", "the spatial dims"),
        "seq": ("1", "feat", "the sequence dim"),
    }[x.layout]
    axes = (2,) if x.layout == "volume" else (2, 3) if x.layout == "image" else (1,)

    def rule(shapes: list[Shape], env: Env) -> Shape:
        return tuple(n for d, n in enumerate(shapes[0]) if d not in axes)

    return Step(
        "reduction",
        f"{kind} over {what}, giving a {out} tensor",
        (x.var,),
        f"torch.{kind}({{0}}, dim={dim})",
        Tensor(f"h{ctx.index}", out, x.feature),
        rule,
    )


def clamp(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    low, low_c, low_l = _param(ctx.index, "clamp_min", rng.choice((-1.0, -0.5, -0.25, 0.0)))
    high, high_c, high_l = _param(ctx.index, "clamp_max", rng.choice((0.25, 0.5, 1.0, 2.0)))
    return Step(
        "clamp",
        f"clamp to [{low}, {high}]",
        (x.var,),
        f"torch.clamp({{0}}, min=self.{low}, max=self.{high})",
        same(x, f"h{ctx.index}"),
        keep_shape,
        low_c + high_c,
        low_l + high_l,
    )


def residual_add(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step | None:
    partners = [t for t, s in ctx.earlier if t.var != x.var and t.layout == x.layout and s == shape]
    if not partners:
        return None
    other = rng.choice(partners)

    def rule(shapes: list[Shape], env: Env) -> Shape:
        need(shapes[0] == shapes[1], f"residual add of {shapes[0]} and {shapes[1]}")
        return shapes[0]

    return Step(
        "residual_add",
        f"residual add of the earlier tensor {other.var}",
        (x.var, other.var),
        "{0} + {1}",
        same(x, f"h{ctx.index}"),
        rule,
    )


def dropout(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    name, constants, layers = _param(ctx.index, "dropout_p", rng.choice((0.1, 0.2, 0.5)))
    # training=False: a reference must be deterministic, and eval-mode dropout is what inference runs
    return Step(
        "dropout",
        f"dropout with probability {name} in eval mode (the identity)",
        (x.var,),
        f"F.dropout({{0}}, p=self.{name}, training=False)",
        same(x, f"h{ctx.index}"),
        keep_shape,
        constants,
        layers,
    )
