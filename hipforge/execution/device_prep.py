"""What the candidate's process does to the device around the candidate, before and between its trials."""

from __future__ import annotations

import threading

from hipforge.execution.job_common import sync

# about 2 ms at 2 GHz: far longer than the host takes from a late trial's input draw to forward's first launch
HOLD_CYCLES = 4_000_000


def warm_up(device: str) -> None:
    """Start what torch and the driver start lazily (thread pools, CUDA's context and library handles), so
    that the thread count the parent takes before the candidate exists already includes them."""
    import torch

    a = torch.randn(256, 256)
    (a @ a).sum().item()  # the BLAS pool
    (torch.ones(1 << 22) * 2).sum().item()  # at::parallel_for's OpenMP team (small ops never start it)
    if device != "cpu":
        x = torch.randn(4, 8, 16, 16, device=device)
        torch.nn.functional.conv2d(x, torch.randn(8, 8, 3, 3, device=device)).sum().item()
        (x.view(32, 256) @ x.view(256, 32)).sum().item()
        sync(device)
    threading.enumerate()


def fill_free_blocks_with_nan(device: str) -> None:
    """Before a forward, every free block of the CUDA caching allocator holds NaN, so an output allocated and
    never written cannot inherit an earlier result (on the CPU, freed memory goes back to the C allocator)."""
    import torch

    if device == "cpu":
        return
    held = []
    for segment in torch.cuda.memory_snapshot():
        for block in segment.get("blocks", []):
            if block.get("state") == "inactive" and block.get("size", 0) >= 4:
                held.append(torch.empty(block["size"] // 4, dtype=torch.float32, device=device).fill_(float("nan")))
    del held


def hold_stream(device: str) -> None:
    """Keep the current stream busy for a while, so that what is enqueued on it next (a late trial's inputs)
    is written only after forward has been called."""
    if device != "cpu":
        import torch

        torch.cuda._sleep(HOLD_CYCLES)
