"""Samplers of the heavy operators: convolutions (2-D, transposed 2-D, 3-D), linear, bmm, normalization."""

from __future__ import annotations

import random

from hipforge.tasks.synth.steps import SPATIAL, Context, Env, Shape, Step, Tensor, conv_len, need, same

CHANNELS = (16, 32, 64, 128)
FEATURES = (128, 256, 512, 1024)


def _size(rng: random.Random, x: Tensor, env: Env, name: str, menu: tuple[int, ...]) -> tuple[str, tuple]:
    """Keep the input's size (so a residual add can follow) or introduce a new size constant."""
    if rng.random() < 0.5:
        return x.feature, ()
    return name, ((name, rng.choice([v for v in menu if v != env[x.feature]])),)


def _conv(op: str, rng: random.Random, x: Tensor, ctx: Context, transposed: bool) -> Step:
    i, dims = ctx.index, SPATIAL[x.layout]
    if transposed:  # (kernel, stride, padding, output_padding): keep the size or double it
        k, s, p, extra = rng.choice(((3, 1, 1, 0), (4, 2, 1, 0), (2, 2, 0, 0), (3, 2, 1, 1)))
    else:
        k, s, extra = rng.choice((1, 3, 3, 5) if dims == 2 else (1, 3)), rng.choice((1, 1, 2)), 0
        p = k // 2
    cout, new = _size(rng, x, ctx.env, f"out_channels_{i}", CHANNELS)
    names = (f"kernel_size_{i}", f"stride_{i}", f"padding_{i}", f"output_padding_{i}")
    kind = "ConvTranspose2d" if transposed else f"Conv{dims}d"
    tail = f", output_padding={names[3]}" if transposed else ""
    layer = (
        f"self.conv_{i} = nn.{kind}({x.feature}, {cout}, {names[0]}, "
        f"stride={names[1]}, padding={names[2]}{tail})"
    )

    def rule(shapes: list[Shape], env: Env) -> Shape:
        b, c, *space = shapes[0]
        need(c == env[x.feature], f"{kind} expects {env[x.feature]} channels, got {c}")
        kk, ss, pp = (int(env[n]) for n in names[:3])
        more = int(env[names[3]]) if transposed else 0
        return (b, int(env[cout]), *(conv_len(n, kk, ss, pp, transposed, more) for n in space))

    what = f"{dims}-D transposed convolution" if transposed else f"{dims}-D convolution"
    params = (k, s, p, extra) if transposed else (k, s, p)
    return Step(
        op,
        f"{what} (kernel {k}, stride {s}, padding {p}) from {x.feature} to {cout} channels",
        (x.var,),
        f"self.conv_{i}({{0}})",
        Tensor(f"h{i}", x.layout, cout),
        rule,
        (*new, *zip(names, params, strict=False)),  # transposed: 4 names
        (layer,),
    )


def conv2d(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    return _conv("conv2d", rng, x, ctx, transposed=False)


def conv3d(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    return _conv("conv3d", rng, x, ctx, transposed=False)


def conv_transpose2d(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    return _conv("conv_transpose2d", rng, x, ctx, transposed=True)


def linear(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    i = ctx.index
    fout, new = _size(rng, x, ctx.env, f"out_features_{i}", FEATURES)

    def rule(shapes: list[Shape], env: Env) -> Shape:
        need(
            shapes[0][-1] == env[x.feature], f"linear expects {env[x.feature]} features, got {shapes[0][-1]}"
        )
        return (*shapes[0][:-1], int(env[fout]))

    return Step(
        "linear",
        f"linear layer (weight and bias) from {x.feature} to {fout} features",
        (x.var,),
        f"self.linear_{i}({{0}})",
        Tensor(f"h{i}", x.layout, fout),
        rule,
        new,
        (f"self.linear_{i} = nn.Linear({x.feature}, {fout})",),
    )


def bmm(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step:
    i = ctx.index
    if rng.random() < 0.5:  # scores of every position against every other, as in attention

        def gram(shapes: list[Shape], env: Env) -> Shape:
            b, n, _ = shapes[0]
            return (b, n, n)

        return Step(
            "bmm",
            "batched matrix product of the input with its own transpose, giving (B, N, N)",
            (x.var,),
            "torch.bmm({0}, {0}.transpose(1, 2))",
            Tensor(f"h{i}", "seq", "seq_len"),
            gram,
        )
    name = f"out_features_{i}"

    def rule(shapes: list[Shape], env: Env) -> Shape:
        (b, n, f), (b2, f2, m) = shapes
        need(b == b2 and f == f2, f"bmm of {shapes[0]} with {shapes[1]}")
        return (b, n, m)

    return Step(
        "bmm",
        f"batched matrix product with a second input w{i} of shape (batch_size, {x.feature}, {name})",
        (x.var, f"w{i}"),
        "torch.bmm({0}, {1})",
        Tensor(f"h{i}", "seq", name),
        rule,
        ((name, rng.choice(FEATURES[:3])),),
        new_input=(f"w{i}", ("batch_size", x.feature, name)),
    )


def norm(rng: random.Random, x: Tensor, shape: Shape, ctx: Context) -> Step | None:
    i, size = ctx.index, int(ctx.env[x.feature])
    if x.layout in ("feat", "seq"):

        def over_last(shapes: list[Shape], env: Env) -> Shape:
            need(shapes[0][-1] == env[x.feature] and shapes[0][-1] >= 2, "layer norm needs >= 2 features")
            return shapes[0]

        return Step(
            "norm",
            f"layer normalization over the last dimension ({x.feature})",
            (x.var,),
            f"self.norm_{i}({{0}})",
            same(x, f"h{i}"),
            over_last,
            layers=(f"self.norm_{i} = nn.LayerNorm({x.feature})",),
        )
    options = [g for g in (2, 4, 8) if size % g == 0 and size // g >= 2]
    if not options:
        return None
    name = f"num_groups_{i}"

    def grouped(shapes: list[Shape], env: Env) -> Shape:
        c, g = shapes[0][1], int(env[name])
        need(c % g == 0 and c // g >= 2, f"group norm of {c} channels in {g} groups")
        return shapes[0]

    return Step(
        "norm",
        f"group normalization of the {x.feature} channels in {name} groups",
        (x.var,),
        f"self.norm_{i}({{0}})",
        same(x, f"h{i}"),
        grouped,
        ((name, rng.choice(options)),),
        (f"self.norm_{i} = nn.GroupNorm({name}, {x.feature})",),
    )
