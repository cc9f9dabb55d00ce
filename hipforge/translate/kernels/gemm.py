"""The GEMM of single-op matmul / bmm / linear tasks: host code around gemm_device.py's kernels.

C[b] = op(A[b]) @ op(B[b]) (+ bias along N), op(X) = X or X^T (B stored (N, K): nn.Linear's weight,
or `b.T`; A stored (K, M): `a.T`); triu/tril of the product masks the epilogue. The tile shape comes from
GenParams.gemm_tile, or from the traced shapes (gemm_tiles.choose), and is recorded in Kernel.choices;
a warp-tiled one (BMxBNxBK/TMxTNwWMxWN) launches gemm_warp.py's kernel in place of gemm_device.py's.
GenParams.gemm_engine "mma" launches gemm_mma.py's matrix-core kernel under nvcc and HIP compilers, that tile
elsewhere (the cpu backend).
Accuracy: each output is one fp32 sum per K slice, a slice at most SLICE_K long (split-K adds the slices
in order): sequential fp32 sums of 8192 products of U(0, 1) pairs stay within ~5 % of KernelBench's
atol = rtol = 1e-4 (numpy, 200k outputs; 11 % at 32768), and longer K is split, so rounding grows with
the slice, not with K (KernelBench L1/4's K = 2^20 broke the tolerance with one running sum).
Split-K also fills the GPU when M x N has too few tiles (KernelBench L1/6: M = N = 256, K = 2^19).
A matrix-vector product (N == 1, or M == 1 against a (N, K) B) takes gemv.py's kernel at run time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hipforge.translate.errors import Untranslatable
from hipforge.translate.ir.values import Val
from hipforge.translate.kernels.common import Kernel
from hipforge.translate.kernels.gemm_device import DEVICE
from hipforge.translate.kernels.gemm_mma import MMA_DEVICE, MMA_THREADS, MMA_TILE
from hipforge.translate.kernels.gemm_tiles import MIN_SPLIT_K, GemmTile, choose, parse
from hipforge.translate.kernels.gemm_warp import WARP_DEVICE
from hipforge.translate.kernels.gemv import DEVICE as GEMV_DEVICE
from hipforge.translate.kernels.gemv import gemv_branches
from hipforge.translate.params import GenParams

SLICE_K = 8192  # the longest K one running sum covers
WORKSPACE_FLOATS = 1 << 26  # split-K's slices of C at most 256 MiB: beyond, fewer (longer) slices


@dataclass(frozen=True)
class GemmEpilogue:
    """Per-element work applied to the GEMM's outputs before their store (gemm_epilogue.py); empty: none. The
    kernels take it as a functor `functor` (float v, int64_t flat index, int column) -> float."""

    device: tuple[str, ...] = ()  # the device function(s) and the functor's struct
    functor: str = "HfGemmPlain"
    value: str = "HfGemmPlain{}"  # the functor built on the host
    host_params: str = ""  # appended to the host function's parameters
    host_lines: tuple[str, ...] = ()  # host lines once the output C exists: operands, sizes, checks
    inputs: tuple[Val, ...] = ()  # the tensors host_params take, in order


def gemm_kernel(name: str, out: Val, params: GenParams, epilogue: GemmEpilogue = GemmEpilogue()) -> Kernel:
    a, b, *rest = out.args
    a, trans_a = _untransposed(a, False)
    b, trans_b = _untransposed(b, out.kind == "linear")
    if a.op != "input" or b.op != "input":
        raise Untranslatable("a GEMM operand computed inside the model")
    inputs = [a, b] + list(rest)
    batched = out.kind == "bmm" and len(b.shape) != 2  # A (..., K) against one B (K, N) is a flat matmul
    if batched and (len(a.shape) != 3 or len(b.shape) != 3 or trans_a):
        raise Untranslatable(f"batched matmul of shapes {a.shape} and {b.shape}")
    if not batched and (len(a.shape) < 2 or len(b.shape) != 2 or (trans_a and len(a.shape) != 2)):
        raise Untranslatable(f"matmul of shapes {a.shape} and {b.shape}")
    n_dim = "B.size(-2)" if trans_b else "B.size(-1)"
    if out.kind == "linear" or (not batched and len(a.shape) > 2):  # every leading dim of A against one B
        sizes = [f"const int64_t K = A.size(-1), M = A.numel() / K, N = {n_dim}, batch = 1;",
                 "auto shape = A.sizes().vec(); shape.back() = N;"]
    elif trans_a:
        sizes = [f"const int64_t K = A.size(0), M = A.size(1), N = {n_dim}, batch = 1;",
                 "std::vector<int64_t> shape{M, N};"]
    elif batched:
        sizes = [f"const int64_t batch = A.size(0), M = A.size(1), K = A.size(2), N = {n_dim};",
                 "std::vector<int64_t> shape{batch, M, N};"]
    else:
        sizes = [f"const int64_t M = A.size(0), K = A.size(1), N = {n_dim}, batch = 1;",
                 "std::vector<int64_t> shape{M, N};"]
    batch = out.shape[0] if batched else 1
    k = a.shape[0] if trans_a else a.shape[-1]
    tile = choose(math.prod(out.shape[:-1]) // batch, out.shape[-1], k, batch) if params.gemm_tile == "auto" \
        else parse(params.gemm_tile)
    tri, diag = {"triu": 1, "tril": 2}.get(out.extra.get("tri", ("", 0))[0], 0), out.extra.get("tri", ("", 0))[1]
    signature = ", ".join(f"torch::Tensor {x}" for x in ("a", "b", "bias")[:len(inputs)]) + epilogue.host_params
    host = [f"torch::Tensor {name}({signature}) {{",
            "    auto A = a.contiguous(), B = b.contiguous();",
            *(f"    {line}" for line in sizes),
            "    auto C = torch::empty(shape, A.options());",
            "    if (C.numel() == 0) return C;",
            *epilogue.host_lines,
            f"    const auto epi = {epilogue.value};",
            "    const int64_t sB = B.dim() == 3 ? B.size(1) * B.size(2) : 0;",  # a 2-D B is shared by the batch
            *(["    auto Bias = bias.contiguous();"] if rest else []),
            f"    const float* bias_ptr = {'Bias.data_ptr<float>()' if rest else 'nullptr'};",
            *([] if batched or tri or epilogue.device else gemv_branches(trans_a, trans_b, params)),
            *_launches(tile, trans_a, trans_b, tri, diag, params, epilogue.functor),
            "    return C;", "}"]
    gemv = "" if batched or tri or epilogue.device else GEMV_DEVICE + "\n"
    device = (WARP_DEVICE if tile.warp else DEVICE) + (MMA_DEVICE if params.gemm_engine == "mma" else "")
    device += "".join(f"\n{line}" for line in epilogue.device)
    return Kernel(name, device + "\n" + gemv + "\n".join(host) + "\n", tuple(inputs) + epilogue.inputs,
                  {"gemm_tile": str(tile), "split_k": params.split_k,
                   **({"gemm_engine": params.gemm_engine} if params.gemm_engine != "simt" else {})})


def _launches(tile: GemmTile, trans_a: bool, trans_b: bool, tri: int, diag: int, params: GenParams,
              functor: str) -> list[str]:
    """The simt tile kernel's launch; with the mma engine, gemm_mma.py's in its place where nvcc or a HIP
    compiler builds."""
    flags = f"{str(trans_a).lower()}, {str(trans_b).lower()}, {tri}, {functor}"
    warp = f"{tile.wm}, {tile.wn}, " if tile.warp else ""
    simt = _launch(f"{'gemm_wtile_kernel' if tile.warp else 'gemm_kernel'}<{tile.bm}, {tile.bn}, {tile.bk}, "
                   f"{tile.tm}, {tile.tn}, {warp}{flags}>", tile, tile.threads, trans_a, trans_b, tri, diag,
                   params.split_k, functor)
    if params.gemm_engine != "mma":
        return simt
    t = MMA_TILE
    mma = _launch(f"gemm_mma_kernel<{t.bm}, {t.bn}, {t.bk}, {flags}>", t, MMA_THREADS, trans_a, trans_b, tri, diag,
                  params.split_k, functor)
    return ["#if defined(HF_MMA_ENGINE)  // matrix cores at fp32 accuracy (gemm_mma.py)", *mma, "#else", *simt,
            "#endif"]


def _launch(kernel: str, t: GemmTile, threads: int, trans_a: bool, trans_b: bool, tri: int, diag: int,
            split_k: int, functor: str) -> list[str]:
    """Host lines: split-K's slice count and length, the tile kernel, then the slices' sum when split."""
    fill = ("    if (split_k == 0 && tiles * batch * splits < 2 * hf_units)  // idle compute units: shorter slices\n"
            "        splits = std::max<int64_t>(splits, std::min<int64_t>((2 * hf_units + tiles * batch - 1) / "
            f"(tiles * batch), K / {MIN_SPLIT_K}));")
    aligned = "reinterpret_cast<std::uintptr_t>({}.data_ptr<float>()) % 16 == 0"
    vec_a = f"{aligned.format('A')} && {'M' if trans_a else 'K'} % 4 == 0"
    vec_b = f"{aligned.format('B')} && {'K' if trans_b else 'N'} % 4 == 0"
    return [
        "    static const int hf_units = hf_compute_units();",
        f"    const int64_t split_k = {split_k}, tiles = ((M + {t.bm - 1}) / {t.bm}) * ((N + {t.bn - 1}) / {t.bn});",
        f"    int64_t splits = std::max<int64_t>(split_k, (K + {SLICE_K - 1}) / {SLICE_K});  // slices of <= "
        f"{SLICE_K}: accuracy",
        fill,
        f"    splits = std::max<int64_t>(1, std::min<int64_t>({{splits, {WORKSPACE_FLOATS} / (batch * M * N), "
        "65535}));",
        f"    const int64_t k_split = std::max<int64_t>(1, ((K + splits - 1) / splits + {t.bk - 1}) / {t.bk}) * "
        f"{t.bk};",
        "    splits = std::max<int64_t>(1, (K + k_split - 1) / k_split);",
        "    auto W = splits > 1 ? torch::empty({splits * batch * M * N}, A.options()) : C;",
        f"    const dim3 grid((unsigned)tiles, (unsigned)batch, (unsigned)splits), "
        f"block({threads});",
        f"    {kernel}<<<grid, block>>>(A.data_ptr<float>(), B.data_ptr<float>(), bias_ptr, "
        "W.data_ptr<float>(), (int)M, (int)N, (int)K, (int)k_split, M * K, sB, M * N, "
        f"splits > 1 ? batch * M * N : 0, {diag}, {vec_a}, {vec_b}, epi);",
        "    if (splits > 1) {",
        "        const int64_t total = batch * M * N;",
        f"        gemm_split_sum<{tri}, {functor}><<<(unsigned)std::min<int64_t>((total + 255) / 256, 4 * 65535), "
        f"256>>>(W.data_ptr<float>(), bias_ptr, C.data_ptr<float>(), (int)M, (int)N, total, (int)splits, {diag}, "
        "epi);",
        "    }",
    ]


def _untransposed(x: Val, transposed: bool) -> tuple[Val, bool]:
    """An operand seen through x.T / x.transpose(-2, -1) of an input: the input, with the flag flipped."""
    if x.op == "aten" and x.kind == "view" and ("dims" in x.extra or x.fn == "{0}.T"):
        dims = x.extra.get("dims", (0, 1))
        if {d % len(x.shape) for d in dims} != {len(x.shape) - 2, len(x.shape) - 1}:
            raise Untranslatable("a transpose that is not of the last two dims")
        return x.args[0], not transposed
    return x, transposed
