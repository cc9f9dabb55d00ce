"""Adversarial input variants: honest float32 kernels pass on every variant ``usable`` accepts, kernels
that read their inputs as float16 or bfloat16 fail on at least one, and transforms are deterministic.

CPU only. Run as a script to print the op x variant table."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hipforge.execution import adversarial

ATOL = RTOL = 1e-4
SEEDS = (0, 1)
ROWS, LONG = 8, 8192


class Model(nn.Module):
    """A task's Model: a function of its own layer (if any) and its inputs."""

    def __init__(self, fn: Callable[..., torch.Tensor], layer: nn.Module | None = None) -> None:
        super().__init__()
        self.fn, self.layer = fn, layer

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(self.layer, *xs)


def _chunked_sum(x: torch.Tensor, dim: int = -1, chunk: int = 64) -> torch.Tensor:
    """A left-to-right sum of chunk sums: a legitimate order other than torch's."""
    total = torch.zeros_like(x.select(dim, 0))
    for part in x.split(chunk, dim):
        total = total + part.sum(dim)
    return total


def _linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    w = layer.weight
    return sum(x[:, k:k + 128] @ w[:, k:k + 128].T for k in range(0, x.shape[1], 128)) + layer.bias


def _layer_norm(layer: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    mean = _chunked_sum(x).unsqueeze(-1) / x.shape[-1]
    var = _chunked_sum((x - mean) ** 2).unsqueeze(-1) / x.shape[-1]
    return (x - mean) / torch.sqrt(var + layer.eps) * layer.weight + layer.bias


def _conv(layer: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    cols = F.unfold(x, layer.kernel_size)  # (n, c*k*k, positions): a GEMM instead of torch's conv
    out = layer.weight.reshape(layer.out_channels, -1) @ cols + layer.bias[:, None]
    side = x.shape[-1] - layer.kernel_size[0] + 1
    return out.reshape(x.shape[0], layer.out_channels, side, side)


def _softmax(_: None, x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    return e / _chunked_sum(e).unsqueeze(-1)


def _apply(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return layer(x)


Forward = Callable[..., torch.Tensor]
ELEMENTWISE, LONG_ROW, TWO = [(ROWS, 1024)], [(ROWS, LONG)], [(ROWS, 1024)] * 2
# name: (reference forward, its layer's factory, an honest float32 alternative, input shapes)
OPS: dict[str, tuple[Forward, Callable[[], nn.Module] | None, Forward, list[tuple[int, ...]]]] = {
    "relu": (lambda _, x: torch.relu(x), None, lambda _, x: x.clamp_min(0), ELEMENTWISE),
    "gelu": (lambda _, x: F.gelu(x), None, lambda _, x: 0.5 * x * (1 + torch.erf(x / 2 ** 0.5)), ELEMENTWISE),
    "sigmoid": (lambda _, x: torch.sigmoid(x), None, lambda _, x: 1 / (1 + torch.exp(-x)), ELEMENTWISE),
    "tanh": (lambda _, x: torch.tanh(x), None, lambda _, x: 2 * torch.sigmoid(2 * x) - 1, ELEMENTWISE),
    "linear": (_apply, lambda: nn.Linear(1024, 256), _linear, ELEMENTWISE),
    "sum": (lambda _, x: x.sum(1), None, lambda _, x: _chunked_sum(x), LONG_ROW),
    "mean": (lambda _, x: x.mean(1), None, lambda _, x: _chunked_sum(x) / x.shape[1], LONG_ROW),
    "softmax": (lambda _, x: torch.softmax(x, 1), None, _softmax, LONG_ROW),
    "layer_norm": (_apply, lambda: nn.LayerNorm(1024), _layer_norm, ELEMENTWISE),
    "conv2d": (_apply, lambda: nn.Conv2d(8, 16, 3), _conv, [(2, 8, 16, 16)]),
    "mse_loss": (lambda _, a, b: torch.mean((a - b) ** 2), None,
                 lambda _, a, b: _chunked_sum(((a - b) ** 2).reshape(-1)) / a.numel(), TWO),
    "scale_add": (lambda _, x, y: x * 2.5 + y, None, lambda _, x, y: torch.add(y, x, alpha=2.5), TWO),
}
STANDARD = "standard"
READS = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _close(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """The evaluator's rule, elementwise; NaN anywhere fails."""
    return bool(((out - ref).abs() <= ATOL + RTOL * ref.abs()).all())


def _inputs(op: str, seed: int) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    return [torch.randn(shape) for shape in OPS[op][3]]


@cache
def measure(op: str, variant: str) -> dict[str, bool]:
    """For one op and variant over SEEDS: usable (on every seed), honest (both honest float32
    computations pass wherever usable), and per half format, caught (fails on some seed)."""
    forward, layer, alt, _ = OPS[op]
    result = {"usable": True, "honest": True, **{read: False for read in READS}}
    for seed in SEEDS:
        torch.manual_seed(1000 + seed)
        model = Model(forward, layer() if layer else None)
        xs = _inputs(op, seed)
        if variant != STANDARD:
            xs = adversarial.transform(variant, xs, seed)
        with torch.no_grad():
            ref = model(*xs)
            ref64 = model.double()(*[x.double() for x in xs])
            model.float()
            usable = adversarial.usable([ref], [ref64], ATOL, RTOL)
            result["usable"] &= usable
            honest = [model(*[x.clone() for x in xs])]
            honest.append(alt(model.layer, *xs))
            if usable:
                result["honest"] &= all(_close(out, ref) for out in honest)
            for read, dtype in READS.items():
                cheat = model(*[x.to(dtype).float() for x in xs])
                result[read] |= not _close(cheat, ref)
    return result


@pytest.mark.parametrize("op", list(OPS))
def test_honest_float32_passes_every_usable_variant(op: str) -> None:
    for variant in adversarial.KINDS:
        assert measure(op, variant)["honest"], f"{op} on {variant}: an honest float32 computation failed"


def test_most_ops_have_a_usable_variant() -> None:
    without = [op for op in OPS if not any(measure(op, v)["usable"] for v in adversarial.KINDS)]
    assert len(without) <= len(OPS) // 4, f"no usable variant for {without}"


# Half reads within 1e-4 of the reference on every input, so no input can expose them (checked below).
WITHIN_TOLERANCE = {("sigmoid", "fp16")}


@pytest.mark.parametrize("read", list(READS))
@pytest.mark.parametrize("op", list(OPS))
def test_half_read_caught_where_standard_inputs_miss_it(op: str, read: str) -> None:
    if measure(op, STANDARD)[read] or (op, read) in WITHIN_TOLERANCE:
        return  # the task's own inputs already catch it, or nothing can
    catching = [v for v in adversarial.KINDS if measure(op, v)["usable"] and measure(op, v)[read]]
    assert catching, f"{op} reading its inputs as {read} passes standard inputs and every usable variant"


@pytest.mark.parametrize(("op", "read"), sorted(WITHIN_TOLERANCE))
def test_exempt_half_reads_are_within_tolerance_on_every_input(op: str, read: str) -> None:
    # Dense enough that every half-precision rounding interval in [-40, 40] is sampled; beyond it
    # sigmoid is 1 in float32, or below atol, whatever the input's rounding.
    x = torch.linspace(-40, 40, 2_000_001)
    forward = OPS[op][0]
    assert _close(forward(None, x.to(READS[read]).float()), forward(None, x))


def test_standard_inputs_miss_half_reads_through_reductions() -> None:
    # The motivation: on randn inputs a long reduction averages half precision's rounding away.
    assert not measure("mean", STANDARD)["fp16"]


def _sample() -> list[Any]:
    torch.manual_seed(7)
    return [torch.randn(4, 33), torch.randn(5, dtype=torch.float64), torch.randn(6).half(),
            torch.arange(6), torch.tensor([True, False]), 3, 0.5, torch.randn(3, 4).T]


@pytest.mark.parametrize("kind", adversarial.KINDS)
def test_transform_is_deterministic_and_keeps_structure(kind: str) -> None:
    xs = _sample()
    first = adversarial.transform(kind, xs, seed=5)
    again = adversarial.transform(kind, [x.clone() if isinstance(x, torch.Tensor) else x for x in xs], 5)
    for x, a, b in zip(xs, first, again, strict=True):
        if not isinstance(x, torch.Tensor):
            assert a == x and b == x
            continue
        assert (a.shape, a.dtype, a.device) == (x.shape, x.dtype, x.device)
        assert torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))  # bit-identical
        if x.is_floating_point():
            assert not torch.equal(a, x), "a float input was left as it was"
        else:
            assert torch.equal(a, x)
    assert torch.equal(xs[0], _sample()[0]), "transform modified its input"
    other = adversarial.transform(kind, xs, seed=6)[0]
    assert kind == "fp16_range" or not torch.equal(first[0], other), "the seed does not matter"


def test_kinds_do_what_they_describe() -> None:
    torch.manual_seed(0)
    x = [torch.randn(4096)]
    ranged = adversarial.transform("fp16_range", x, 0)[0]
    assert 2 ** 17 <= ranged.abs().max() < 2 ** 18 and torch.isinf(ranged.half()).any()
    mixed = adversarial.transform("mixed_scale", x, 0)[0]
    assert set((mixed / x[0]).log2().round().unique().tolist()) == set(range(-8, 9))
    for kind in ("low_mantissa", "large_offset"):
        near = adversarial.transform(kind, x, 0)[0]
        assert near.unique().numel() > 1000  # distinct in float32 ...
        for dtype in READS.values():  # ... one value in half precision
            assert near.to(dtype).unique().numel() == 1
    for kind in adversarial.KINDS:
        assert adversarial.describe(kind)


def test_unknown_kind_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown adversarial kind 'fp8'.*fp16_range"):
        adversarial.transform("fp8", [torch.ones(2)], 0)
    with pytest.raises(ValueError, match="unknown adversarial kind"):
        adversarial.describe("fp8")


def test_usable_refuses_non_finite_ill_conditioned_and_integer_outputs() -> None:
    ref64 = torch.randn(100, dtype=torch.float64)
    assert adversarial.usable([ref64.float()], [ref64], ATOL, RTOL)
    assert not adversarial.usable([ref64.float() * (1 + 3 * RTOL)], [ref64], ATOL, RTOL)
    inf = ref64.float().clone()
    inf[3] = float("inf")
    assert not adversarial.usable([inf], [ref64], ATOL, RTOL)
    assert not adversarial.usable([torch.arange(3)], [torch.arange(3)], ATOL, RTOL)


if __name__ == "__main__":
    print(f"{'op':<11} {'variant':<13} usable fp16-caught bf16-caught  (caught: fails 1e-4 on some seed)")
    for op_name in OPS:
        for kind_name in (STANDARD, *adversarial.KINDS):
            r = measure(op_name, kind_name)
            caught = [str(r[read]) if r["usable"] else "-" for read in READS]
            print(f"{op_name:<11} {kind_name:<13} {r['usable']!s:<6} {caught[0]:<11} {caught[1]}")
