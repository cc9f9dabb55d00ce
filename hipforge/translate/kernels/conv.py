"""Convolutions for single-op conv tasks: one generic N-d direct kernel (forward or transposed), and the
implicit GEMM of conv_gemm.py where the channels fill its tiles, chosen at run time.

1-, 2- and 3-d convolutions share the kernels: spatial dims are padded to three with size-1 dims in
front. Kernel sizes, stride, padding and dilation are the module's hyperparameters (smoke scaling
keeps them) and become compile-time constants, so the tap loops unroll; batch, channel and spatial
sizes, and a forward conv's groups, are read from the tensors at run time. Each thread computes OCB
output channels of one output position (the input values it loads serve all of them) in a 1-D
grid-stride loop with 64-bit flat indices: no grid dimension limit or 32-bit overflow at KernelBench sizes.
Transposed convolution gathers (no atomics, deterministic). An Epilogue (conv_epilogue.py) applies the
elementwise work after a conv to each output before its store, in both kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.conv_spec import ConvSpec
from hipforge.translate.ir.values import Val
from hipforge.translate.kernels.common import Kernel, grid_for
from hipforge.translate.kernels.conv_gemm import gemm_applies, gemm_device
from hipforge.translate.params import GenParams

OCB = 4  # output channels per thread when the channels per group divide by it
GEMM_MIN = 32  # output channels per group, and input channels x taps, from which implicit GEMM pays

# Tap loops over one input channel (`xp`/`wp` at its input plane and filter). The direct form reads
# input o * stride - pad + k * dil; the transposed form gathers input (o + pad - k * dil) / stride,
# visiting only the taps where that division is exact: the first such k, then every J-th.
FORWARD_TAP = """#pragma unroll
for (int k{a} = 0; k{a} < K{A}; ++k{a}) {{
    const int i{a} = o{a} * S{A} - P{A} + k{a} * D{A};
    if (i{a} < 0 || i{a} >= {SIZE}) continue;"""
FIRST_TAP = """int f{a} = 0;  // the first tap whose input position is whole
while (f{a} < J{A} && (o{a} + P{A} - f{a} * D{A}) % S{A}) ++f{a};"""
TRANSPOSED_TAP = """for (int k{a} = f{a} < J{A} ? f{a} : K{A}; k{a} < K{A}; k{a} += J{A}) {{
    const int t{a} = o{a} + P{A} - k{a} * D{A};
    if (t{a} < 0) break;
    const int i{a} = t{a} / S{A};
    if (i{a} >= {SIZE}) continue;"""
INNER = """const float v = xp[((int64_t)id * H + ih) * W + iw];
const int tap = (kd * KH + kh) * KW + kw;
#pragma unroll
for (int j = 0; j < B; ++j) acc[j] += v * wp[j * WSTEP + tap];"""

DEVICE = """template <int B>
__global__ void {name}_kernel(const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, int64_t N, int C, int D, int H, int W,
        int OC, int OD, int OH, int OW, int G{extra}) {{
    constexpr int KD = {k[0]}, KH = {k[1]}, KW = {k[2]}, SD = {s[0]}, SH = {s[1]}, SW = {s[2]};
    constexpr int PD = {p[0]}, PH = {p[1]}, PW = {p[2]}, DD = {d[0]}, DH = {d[1]}, DW = {d[2]};
    constexpr int JD = {j[0]}, JH = {j[1]}, JW = {j[2]}, TAPS = KD * KH * KW;
    const int Cg = C / G, OCg = OC / G;  // input and output channels per group
    const int64_t WSTEP = {step};  // from one output channel's filter to the next
    const int64_t in_plane = (int64_t)D * H * W, out_plane = (int64_t)OD * OH * OW;
    const int64_t total = N * (OC / B) * out_plane;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {{
        const int64_t pos = i % out_plane, rest = i / out_plane;
        const int oc0 = (int)(rest % (OC / B)) * B;
        const int64_t n = rest / (OC / B);
        const int ow = (int)(pos % OW), oh = (int)((pos / OW) % OH), od = (int)(pos / ((int64_t)OW * OH));
        const int g = oc0 / OCg;
        float acc[B];
        #pragma unroll
        for (int j = 0; j < B; ++j) acc[j] = bias ? bias[oc0 + j] : 0.0f;{first}
        for (int c = 0; c < Cg; ++c) {{
            const float* xp = x + (n * C + (int64_t)g * Cg + c) * in_plane;
            const float* wp = w + {filter};
{taps}
        }}
        #pragma unroll
        for (int j = 0; j < B; ++j) {store}
    }}
}}
"""


def _taps(transposed: bool) -> str:
    """The nested tap loops (depth, height, width) around the multiply-accumulate, indented in place."""
    loops = [_indent((TRANSPOSED_TAP if transposed else FORWARD_TAP).format(a=a, A=a.upper(), SIZE=size), 4 * depth)
             for depth, (a, size) in enumerate((("d", "D"), ("h", "H"), ("w", "W")))]
    closing = [" " * 4 * depth + "}" for depth in (2, 1, 0)]
    return _indent("\n".join([*loops, _indent(INNER, 12), *closing]), 12)


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def conv_chain(order: list[Val], output: Val, params: GenParams) -> tuple[tuple[Kernel, ...], tuple[str, ...]]:
    """Kernels and forward lines of a model that is one convolution or a chain of them (depthwise-separable)."""
    kernels: list[Kernel] = []
    lines: list[str] = []
    expr: dict[int, str] = {}
    for v in order:
        if v.op == "input":
            expr[id(v)] = v.ref
            continue
        name = v.fn.split("(")[0] or v.op
        if v.kind != "conv" or any(id(a) not in expr for a in v.operands()):
            raise Untranslatable(f"unsupported op: {name} between convolutions")
        if "conv" not in v.extra:
            raise Untranslatable(v.extra.get("conv_unsupported", f"unsupported op: {name} on its own"))
        kernel = conv_kernel(f"conv_{len(kernels)}", v, params)
        kernels.append(kernel)
        expr[id(v)] = f"t{len(lines)}"
        lines.append(f"{expr[id(v)]} = hip_ext.{kernel.name}({', '.join(expr[id(a)] for a in kernel.inputs)})")
    lines.append(f"return {expr[id(output)]}")
    return tuple(kernels), tuple(lines)


def plain_store(at: str, channel: str, value: str) -> str:
    """The conv kernels' store of output element `at` (of output channel `channel`) without an epilogue."""
    return f"y[{at}] = {value};"


@dataclass(frozen=True)
class Epilogue:
    """Per-element work applied to a conv's result before its store (kernels/conv_epilogue.py); empty: none."""

    op: tuple[str, ...] = ()  # device function(s) the store calls
    kernel_params: str = ""  # appended to both conv kernels' parameters
    store: Callable[[str, str, str], str] = plain_store  # (flat index, output channel, value) -> C statement
    host_params: str = ""  # appended to the host function's parameters
    host_inputs: tuple[str, ...] = ()  # host lines after the conv's operands are made contiguous
    host_checks: tuple[str, ...] = ()  # host lines once the output Y exists
    launch_args: str = ""  # appended to both launches' arguments
    inputs: tuple[Val, ...] = ()  # the tensors host_params take, in order


def conv_kernel(name: str, out: Val, params: GenParams, epilogue: Epilogue = Epilogue()) -> Kernel:
    """The conv `out` (its operands the host function's first inputs), with `epilogue` applied before each store."""
    spec: ConvSpec = out.extra["conv"]
    nd, has_bias = len(spec.kernel), len(out.args) == 3
    if not 1 <= nd <= 3:
        raise Untranslatable(f"unsupported op: a {nd}-d convolution")

    def pad3(values: tuple[int, ...], fill: int) -> tuple[int, ...]:
        return (fill,) * (3 - nd) + tuple(values)

    # forward weights are (OC, C/G, taps...), transposed ones (C, OC/G, taps...)
    if spec.transposed:
        at, step = "(((int64_t)g * Cg + c) * OCg + (oc0 - g * OCg)) * TAPS", "TAPS"
    else:
        at, step = "((int64_t)oc0 * Cg + c) * TAPS", "(int64_t)Cg * TAPS"
    tap_steps = [s // math.gcd(s, d) for s, d in zip(spec.stride, spec.dilation, strict=True)]
    stored = epilogue.store("(n * OC + oc0 + j) * out_plane + pos", "oc0 + j", "acc[j]")
    device = DEVICE.format(name=name, extra=epilogue.kernel_params, store=stored, k=pad3(spec.kernel, 1),
                           s=pad3(spec.stride, 1), p=pad3(spec.padding, 0),
                           d=pad3(spec.dilation, 1), j=pad3(tap_steps, 1), filter=at, step=step,
                           taps=_taps(spec.transposed), first="".join(
                               "\n" + _indent(FIRST_TAP.format(a=a, A=a.upper()), 8) for a in "dhw" if spec.transposed))
    if gemm_applies(spec):
        device += "\n" + gemm_device(name, spec, epilogue.kernel_params, epilogue.store, params.gemm_engine == "mma")
    if epilogue.op:
        device = "\n".join(epilogue.op) + "\n\n" + device
    host = _host(name, spec, has_bias, params, epilogue)
    return Kernel(name, device + "\n" + host + "\n", tuple(out.args) + epilogue.inputs)


def _host(name: str, spec: ConvSpec, has_bias: bool, params: GenParams, epilogue: Epilogue) -> str:
    nd = len(spec.kernel)
    outs = []
    for d in range(nd):
        span = spec.dilation[d] * (spec.kernel[d] - 1)
        if spec.transposed:
            outs.append(f"(I{d} - 1) * {spec.stride[d]} + {span + spec.output_padding[d] + 1 - 2 * spec.padding[d]}")
        else:
            outs.append(f"(I{d} + {2 * spec.padding[d] - span - 1}) / {spec.stride[d]} + 1")

    def three(names: list[str]) -> str:
        return ", ".join(["1"] * (3 - nd) + names)

    signature = ", ".join(f"torch::Tensor {a}" for a in ("x", "w", "bias")[:2 + has_bias]) + epilogue.host_params
    kernel_dims = " && ".join(f"Wt.size({d + 2}) == {k}" for d, k in enumerate(spec.kernel))
    if spec.transposed:  # groups cannot be read off a transposed weight: the module's value
        shape = [f"const int64_t G = {spec.groups}, OC = Wt.size(1) * G;", "Wt.size(0) == C && C % G == 0"]
    else:  # groups follow the channels (depthwise: groups = in_channels, which smoke scaling may shrink)
        shape = ["const int64_t G = C / Wt.size(1), OC = Wt.size(0);", "C % Wt.size(1) == 0 && OC % G == 0"]
    launch = "<<<blocks, threads>>>(X.data_ptr<float>(), Wt.data_ptr<float>(), " + \
        ("Bias.data_ptr<float>()" if has_bias else "nullptr") + \
        f", Y.data_ptr<float>(), N, (int)C, {three([f'(int)I{d}' for d in range(nd)])}, (int)OC, " \
        f"{three([f'(int)O{d}' for d in range(nd)])}, (int)G{epilogue.launch_args})"
    return "\n".join([
        f"torch::Tensor {name}({signature}) {{",
        f'    TORCH_CHECK(x.dim() == {nd + 2} && w.dim() == {nd + 2}, "{name}: expects {nd}-d conv operands");',
        "    auto X = x.contiguous(), Wt = w.contiguous();",
        *(["    auto Bias = bias.contiguous();"] if has_bias else []),
        *epilogue.host_inputs,
        "    const int64_t N = X.size(0), C = X.size(1), " + ", ".join(
            f"I{d} = X.size({d + 2})" for d in range(nd)) + ";",
        f"    {shape[0]}",
        f'    TORCH_CHECK({kernel_dims} && {shape[1]}, "{name}: weight shape does not match the translated conv");',
        "    const int64_t " + ", ".join(f"O{d} = {e}" for d, e in enumerate(outs)) + ";",
        f'    TORCH_CHECK({" && ".join(f"O{d} > 0" for d in range(nd))}, "{name}: empty output size");',
        f"    auto Y = torch::empty({{N, OC, {', '.join(f'O{d}' for d in range(nd))}}}, X.options());",
        *epilogue.host_checks,
        "    if (Y.numel() == 0) return Y;",
        f"    const int threads = {params.block_size};",
        *_gemm_branch(name, spec, launch, params.gemm_engine == "mma"),
        f"    if ((OC / G) % {OCB} == 0) {{",
        f"        const int blocks = {grid_for(f'Y.numel() / {OCB}', params.block_size)};",
        f"        {name}_kernel<{OCB}>{launch};",
        "    } else {",
        f"        const int blocks = {grid_for('Y.numel()', params.block_size)};",
        f"        {name}_kernel<1>{launch};",
        "    }",
        "    return Y;", "}"])


def _gemm_branch(name: str, spec: ConvSpec, launch: str, mma: bool) -> list[str]:
    """Host lines that take the implicit-GEMM kernel when the channels are dense enough to fill its tiles (with
    `mma`, its matrix-core twin where nvcc or a HIP compiler builds)."""
    if not gemm_applies(spec):
        return []
    taps = math.prod(spec.kernel)
    tiles = "((Y.numel() / OC + 63) / 64) * ((OC / G + 63) / 64) * G"
    call = f"<{str(spec.transposed).lower()}>" + launch.replace("threads>>>", "256>>>") + ";"
    kernel = [f"        {name}_gemm{call}"]
    if mma:
        kernel = ["#if defined(HF_MMA_ENGINE)  // matrix cores at fp32 accuracy (gemm_mma.py)",
                  f"        {name}_gemm_mma{call}", "#else", *kernel, "#endif"]
    return [f"    if (OC / G >= {GEMM_MIN} && C / G * {taps} >= {GEMM_MIN}) {{",
            f"        const int blocks = (int)std::min<int64_t>({tiles}, 65535);",
            *kernel, "        return Y;", "    }"]
