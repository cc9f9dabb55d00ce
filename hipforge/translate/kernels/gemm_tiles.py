"""The GEMM's tile shapes: what a block and each thread of it compute, and the choice from a task's shapes.

A tile is written BMxBNxBK/TMxTN: a block computes BM x BN outputs of C stepping BK along K, each of its
(BM / TM) * (BN / TN) threads TM x TN of them from registers, as float4 groups spread over the whole block
tile (gemm_device.py's gemm_kernel). BMxBNxBK/TMxTNwWMxWN is the warp-tiled kernel (gemm_warp.py): the
block tile is cut into WM x WN warp tiles, each computed by a lane group of LANES threads (an NVIDIA warp,
half an AMD wave64: only a thread -> output mapping, nothing depends on the hardware's wave size), each lane
TM x TN outputs as (TM / 4) x (TN / 4) sub-tiles of 4 x 4, (WM / TM) x (WN / TN) lanes per sub-tile.
The translator picks one from the traced full-size shapes (`choose`), records it in the candidate's params
(GenParams.gemm_tile), and evolution may swap it for another of TILES.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# blocks wanted in flight: two per compute unit of the larger targets (H100 132 SMs, MI350X 256 CUs)
TARGET_BLOCKS = 264
# the shortest K slice split-K hands a block: below it the split's overhead outweighs the fill
MIN_SPLIT_K = 256
# the threads of a warp tile (gemm_warp.py): a compile-time unit of the mapping, not the hardware's warpSize
LANES = 32


@dataclass(frozen=True)
class GemmTile:
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    wm: int = 0  # the warp tile (gemm_warp.py); 0: the block-wide mapping of gemm_kernel
    wn: int = 0

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def warp(self) -> bool:
        return self.wm > 0

    def __str__(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}/{self.tm}x{self.tn}" + (f"w{self.wm}x{self.wn}" if self.warp else "")


def parse(text: str) -> GemmTile:
    """A tile from its BMxBNxBK/TMxTN[wWMxWN] spelling; ValueError when it is malformed or cannot be built."""
    match = re.fullmatch(r"(\d+)x(\d+)x(\d+)/(\d+)x(\d+)(?:w(\d+)x(\d+))?", text)
    if not match:
        raise ValueError(f"gemm_tile {text!r} is not BMxBNxBK/TMxTN or BMxBNxBK/TMxTNwWMxWN")
    tile = GemmTile(*(int(g) for g in match.groups() if g is not None))
    # thread tiles of 4 or 8: each thread reads its operands as float4 from shared memory
    if tile.tm not in (4, 8) or tile.tn not in (4, 8) or tile.bk not in (4, 8, 16, 32):
        raise ValueError(f"gemm_tile {text}: TM and TN must be 4 or 8, BK 4, 8, 16 or 32")
    if tile.bm not in (32, 64, 128, 256) or tile.bn not in (32, 64, 128, 256):
        raise ValueError(f"gemm_tile {text}: BM and BN must be 32, 64, 128 or 256")
    # whole wavefronts on AMD (64) and warps on NVIDIA (32)
    if tile.threads % 64 or not 64 <= tile.threads <= 1024:
        raise ValueError(f"gemm_tile {text}: (BM/TM)*(BN/TN) = {tile.threads} threads, not a multiple of 64 in "
                         "[64, 1024]")
    if 2 * tile.bk * (tile.bm + tile.bn + 8) * 4 > 48 * 1024:  # double-buffered, padded: static LDS limit
        raise ValueError(f"gemm_tile {text}: its shared tiles exceed 48 KiB")
    if match.group(6) is not None:
        _check_warp(tile, text)
    return tile


def _check_warp(tile: GemmTile, text: str) -> None:
    """A warp tile divides the block tile and holds LANES lanes of TM x TN outputs."""
    if tile.wm <= 0 or tile.wn <= 0 or tile.bm % tile.wm or tile.bn % tile.wn:
        raise ValueError(f"gemm_tile {text}: the warp tile {tile.wm}x{tile.wn} does not divide the block tile "
                         f"{tile.bm}x{tile.bn}")
    if tile.wm % tile.tm or tile.wn % tile.tn or (tile.wm // tile.tm) * (tile.wn // tile.tn) != LANES:
        raise ValueError(f"gemm_tile {text}: a warp tile is {LANES} lanes of TMxTN outputs: WM/TM and WN/TN "
                         f"must be whole and multiply to {LANES}")


# largest first: what `choose` walks, and what evolution picks from; then the warp-tiled ones (gemm_warp.py):
# warp tiles 32x64 (CUTLASS's SIMT sgemm: lanes 4x8) and 64x32 (lanes 8x4), BK 8 and 16
TILES = ("128x128x8/8x8", "128x128x16/8x8", "128x64x8/8x4", "64x128x8/4x8", "64x64x8/4x4", "64x64x16/4x4",
         "32x32x8/4x4", "256x128x8/8x8",
         "128x128x8/8x8w32x64", "128x128x16/8x8w32x64", "128x128x8/8x8w64x32", "128x128x16/8x8w64x32",
         "256x128x8/8x8w64x32", "128x64x16/8x4w32x32", "64x64x16/4x4w32x16")


def choose(m: int, n: int, k: int, batch: int) -> GemmTile:
    """The largest tile whose blocks (split-K included, K slices of MIN_SPLIT_K or more) fill the GPU.

    Large tiles read each operand fewest times; smaller ones are only worth it when the large ones leave
    compute units idle and K is too short to split instead.
    """
    for text in ("128x128x8/8x8", "128x64x8/8x4", "64x64x8/4x4"):
        tile = parse(text)
        blocks = math.ceil(m / tile.bm) * math.ceil(n / tile.bn) * batch
        if blocks * max(1, k // MIN_SPLIT_K) >= TARGET_BLOCKS:
            return tile
    return parse("32x32x8/4x4")
