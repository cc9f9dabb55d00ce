"""The 14-operator template library that composition and constraint generation build modules from.

Each operator is a PyTorch snippet with sampled parameters and a shape rule (``steps.Step``); the
layouts it accepts are feat (B, F), seq (B, N, F), image (B, C, H, W) and volume (B, C, D, H, W).

==================  =====================  ==============================================================
operator            accepts                snippet and shape rule
==================  =====================  ==============================================================
conv2d              image                  nn.Conv2d, kernel 1/3/5, stride 1/2: H' = (H + 2p - k) // s + 1
conv_transpose2d    image                  nn.ConvTranspose2d keeping or doubling H, W
conv3d              volume                 nn.Conv3d, kernel 1/3, stride 1/2, on D, H, W
linear              feat, seq              nn.Linear on the last dim: F -> F'
bmm                 seq                    torch.bmm with x^T (B, N, N) or with an extra input (B, F, M)
norm                all                    LayerNorm over F (feat, seq), GroupNorm over C (image, volume)
softmax             all                    softmax / log_softmax over the feature or channel dim (size >= 2)
pool                image, volume          max / avg pooling with window 2: spatial sizes halve
activation          all                    relu, gelu, silu, tanh, sigmoid, leaky_relu, hardswish, mish, ...
bias_scale          all                    learned per-channel bias, or * / - / / a scalar constant
reduction           seq, image, volume     mean / amax / sum over N (-> feat), H, W (-> feat) or D (-> image)
clamp               all                    torch.clamp to [min, max] constants
residual_add        all                    adds an earlier tensor of exactly the same shape
dropout             all                    F.dropout(training=False): eval mode, the identity
==================  =====================  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from hipforge.tasks.synth import layers, pointwise
from hipforge.tasks.synth.steps import Sampler

ALL = frozenset({"feat", "seq", "image", "volume"})


@dataclass(frozen=True)
class Operator:
    name: str
    doc: str  # one line, shown to an LLM when it composes
    layouts: frozenset[str]
    sample: Sampler


OPERATORS: tuple[Operator, ...] = (
    Operator("conv2d", "2-D convolution over NCHW images", frozenset({"image"}), layers.conv2d),
    Operator(
        "conv_transpose2d",
        "2-D transposed convolution (upsampling) over NCHW images",
        frozenset({"image"}),
        layers.conv_transpose2d,
    ),
    Operator("conv3d", "3-D convolution over NCDHW volumes", frozenset({"volume"}), layers.conv3d),
    Operator(
        "linear", "fully connected layer on the last dimension", frozenset({"feat", "seq"}), layers.linear
    ),
    Operator("bmm", "batched matrix multiply of (B, N, F) sequences", frozenset({"seq"}), layers.bmm),
    Operator("norm", "layer norm over features or group norm over channels", ALL, layers.norm),
    Operator(
        "softmax", "softmax or log-softmax over the feature or channel dimension", ALL, pointwise.softmax
    ),
    Operator(
        "pool",
        "max or average pooling over spatial dimensions",
        frozenset({"image", "volume"}),
        pointwise.pool,
    ),
    Operator(
        "activation",
        "an elementwise activation (ReLU, GELU, SiLU, tanh, sigmoid, ...)",
        ALL,
        pointwise.activation,
    ),
    Operator(
        "bias_scale",
        "a learned per-channel bias, or multiply/shift/divide by a scalar",
        ALL,
        pointwise.bias_scale,
    ),
    Operator(
        "reduction",
        "mean, max or sum over the sequence, spatial or depth dimensions",
        frozenset({"seq", "image", "volume"}),
        pointwise.reduction,
    ),
    Operator("clamp", "clamp every value to a [min, max] range", ALL, pointwise.clamp),
    Operator(
        "residual_add",
        "add an earlier tensor of the same shape (a skip connection)",
        ALL,
        pointwise.residual_add,
    ),
    Operator("dropout", "dropout in eval mode (the identity at inference)", ALL, pointwise.dropout),
)
BY_NAME: dict[str, Operator] = {op.name: op for op in OPERATORS}
