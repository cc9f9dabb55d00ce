"""Device memory as a resource of the evaluations in flight: a slot count alone lets a dozen KernelBench
L1 tasks (6-16 GB of inputs each, held by the reference's and the candidate's processes) take one GPU at
once, and then honest kernels fail with out-of-memory errors that are ours, not theirs.

The reference's process estimates a task's footprint on the meta device before it allocates anything
(`footprint_mb`); the parent admits the evaluation once its share fits beside the others on that device
(`DEVICE_MEMORY.hold`), and each of its two processes' allocators is capped at its part of the share
(`caps_mb`): past it, an allocator recycles its own cache before it asks the device for more, so what was
admitted is what is held. One evaluation always runs, however large: a task bigger than the device fails on
its own merits, and one that runs out of its caps is run again alone on the device, uncapped.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# footprints each process may reserve. The candidate's holds the refill probe's four kept outputs, its inputs, a
# fresh draw and a pristine copy, its live output and the checksums' temporaries; the reference's, float64
# copies of inputs and outputs (conditioning, adversarial inputs). Uncapped, on the H200, a KernelBench-size
# relu (a 2 GB footprint) reserved 21 GB in the candidate's process and 15 GB in the reference's, against the
# 7 GB admitted: evaluations beside it ran out of memory and were run again alone, one at a time
CANDIDATE_FOOTPRINTS, REFERENCE_FOOTPRINTS = 5.0, 4.0
PROCESS_BASE_MB = 512.0  # library workspaces and handles beside the task's tensors (the reference's peaked at 84 MB)
# the candidate's process also holds the L2 flush buffer and its probes: on the H100 (2026-12-05) it reserved 646 MB
# on tasks of under 1 MB with a 256 MB flush, so a cap of 512 MB beyond the footprint sent every evaluation of the
# red team and the executor bench out of memory beside others, to be run again alone, one at a time
CANDIDATE_BASE_MB = 768.0  # beyond the flush buffer
CONTEXTS_MB = 1024.0  # each CUDA context costs about 500 MB, outside any allocator


@dataclass(frozen=True)
class Caps:
    """Device memory (MB) each process of an evaluation may reserve; 0 leaves it uncapped."""

    candidate: float
    reference: float


def caps_mb(footprint_mb: float, flush_l2_mb: float) -> Caps:
    """The processes' caps for a task of this footprint, timed with an L2 flush buffer of this size in the
    candidate's process (uncapped where the footprint is not known)."""
    if footprint_mb <= 0:
        return Caps(0.0, 0.0)
    return Caps(CANDIDATE_FOOTPRINTS * footprint_mb + CANDIDATE_BASE_MB + flush_l2_mb,
                REFERENCE_FOOTPRINTS * footprint_mb + PROCESS_BASE_MB)


def share_mb(footprint_mb: float, flush_l2_mb: float) -> float:
    """What one evaluation of a task with this footprint takes of its device."""
    caps = caps_mb(footprint_mb, flush_l2_mb)
    return caps.candidate + caps.reference + CONTEXTS_MB


class DeviceMemory:
    """Megabytes held per device by the evaluations of this process (a pool worker owns one device)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held: dict[str, float] = {}
        self._running: dict[str, int] = {}
        self._wanting_alone: dict[str, int] = {}

    @contextmanager
    def hold(self, device: str, mb: float, capacity_mb: float, alone: bool = False) -> Iterator[None]:
        """Hold ``mb`` of the device once it fits beside the others; ``alone`` waits for the device to empty
        and keeps newcomers out meanwhile (else a steady stream of small ones would starve it)."""
        with self._changed:
            if alone:
                self._wanting_alone[device] = self._wanting_alone.get(device, 0) + 1
                self._changed.wait_for(lambda: not self._running.get(device))
                self._wanting_alone[device] -= 1
                mb = capacity_mb
            else:
                self._changed.wait_for(lambda: not self._wanting_alone.get(device) and (
                    not self._running.get(device) or self._held.get(device, 0.0) + mb <= capacity_mb))
            self._held[device] = self._held.get(device, 0.0) + mb
            self._running[device] = self._running.get(device, 0) + 1
        try:
            yield
        finally:
            with self._changed:
                self._held[device] -= mb
                self._running[device] -= 1
                self._changed.notify_all()

    def held(self, device: str) -> float:
        with self._changed:
            return self._held.get(device, 0.0)


DEVICE_MEMORY = DeviceMemory()


def footprint_mb(task: Any, init_seed: int) -> float:
    """Weights, buffers, one set of inputs and the most memory the tensors the task's forward creates hold at
    once (its intermediates and outputs, each freed when the forward lets go of it), sized on the meta device
    (nothing allocated);
    where an op has no meta kernel, the forward is taken to need as much as its inputs again, and a task
    that cannot be built there at all counts as nothing (its evaluation is admitted by slots)."""
    import torch

    try:
        with torch.device("meta"):
            torch.manual_seed(init_seed)
            model = task.Model(*task.get_init_inputs())
            inputs = list(task.get_inputs())
    except Exception:  # noqa: BLE001  # e.g. a constructor that reads a value: the real build will tell
        return 0.0
    held = _mb(list(model.parameters()) + list(model.buffers())) + _mb(inputs)
    try:
        return held + _peak_created_mb(model, inputs)
    except Exception:  # noqa: BLE001  # an op without a meta kernel
        return held + _mb(inputs)


def _mb(tensors: Any) -> float:
    import torch

    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor)) / 2**20


def _peak_created_mb(model: Any, inputs: list[Any]) -> float:
    """The most megabytes that new tensors returned by the forward's ops (views and in-place results alias
    another) hold at once: each counts from its op until it is garbage (a bound of every tensor created, as
    if none were freed, admitted a third as many elementwise chains at KernelBench sizes as fit)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Live(TorchDispatchMode):
        now = peak = 0.0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if not any(r.alias_info for r in func._schema.returns):
                for t in tree_leaves(out):
                    if isinstance(t, torch.Tensor):
                        mb = _mb([t])
                        self.now += mb
                        weakref.finalize(t, self.free, mb)
                self.peak = max(self.peak, self.now)
            return out

        def free(self, mb: float) -> None:
            self.now -= mb

    with torch.no_grad(), Live() as live:
        model(*inputs)
    return live.peak


def capacity_mb(device: str) -> float:
    """The device's memory (GPUs), or the host's (the cpu backend's tensors live there)."""
    if device == "cpu":
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / 2**20
