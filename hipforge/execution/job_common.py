"""What the reference's and the candidate's processes do identically, so that both draw the same inputs
for a trial: the task module, the device's numerics settings, and a trial's inputs from its seed."""

from __future__ import annotations

import types
from typing import Any

GPU_JOB_CPU_THREADS = 4
ALLOW_TF32 = False  # every job's cuDNN and matmul setting on the cuda backend (reports state it)


def load_task(source: str, name: str) -> types.ModuleType:
    """The task's module, never written to disk."""
    import sys

    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module  # dynamo and pickling look a class's module up by name
    return module


def setup_device(device: str, memory_cap_mb: float = 0.0) -> None:
    """``memory_cap_mb``: the most device memory this process's allocator may reserve (0: no cap), the share
    its evaluation was admitted with (hipforge.execution.device_memory); past it the allocator recycles its
    own cache before it asks the device for more."""
    import torch

    if device == "cuda":  # fp32 means fp32: cuDNN convs would otherwise run the reference in TF32
        torch.backends.cudnn.allow_tf32 = ALLOW_TF32
        torch.backends.cuda.matmul.allow_tf32 = ALLOW_TF32
        # the work is on the GPU: a CPU thread pool per job (one per core) only uses up RLIMIT_NPROC
        torch.set_num_threads(min(torch.get_num_threads(), GPU_JOB_CPU_THREADS))
        if memory_cap_mb > 0:
            total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / 2**20
            torch.cuda.set_per_process_memory_fraction(min(1.0, memory_cap_mb / total))


def make_inputs(task: types.ModuleType, device: str, seed: int, variant: str | None) -> list[Any]:
    """A trial's inputs: the task's get_inputs() under ``seed``, drawn on the device, then the variant's
    deterministic transform (hipforge.execution.adversarial)."""
    import torch

    torch.manual_seed(seed)
    with torch.device(device):  # factories draw on the device: KernelBench-size inputs in ms, not s
        raw = task.get_inputs()
    values = [x.to(device) if isinstance(x, torch.Tensor) else x for x in raw]
    if variant:
        from hipforge.execution.adversarial import transform

        values = transform(variant, values, seed)
    return values


def build_reference(task: types.ModuleType, device: str, init_seed: int) -> Any:
    """The task's Model, seeded and built where it runs (an 8 GB MLP never passes through host memory)."""
    import torch

    torch.manual_seed(init_seed)
    init_inputs = task.get_init_inputs()
    torch.manual_seed(init_seed)
    with torch.device(device):
        return task.Model(*init_inputs).to(device), init_inputs


def flatten(out: Any) -> list[Any]:
    return [x for item in out for x in flatten(item)] if isinstance(out, tuple | list) else [out]


def sync(device: str) -> None:
    if device != "cpu":
        import torch

        torch.cuda.synchronize()


def free_cached(device: str) -> None:
    """Hand the caching allocator's free blocks back to the device, where a phase far larger than the next
    ends: the other process of the evaluation shares the device. Only the reference's process does this: in
    the candidate's, freed blocks are refilled with NaN (device_prep), and fresh ones could hold its old results."""
    if device != "cpu":
        import torch

        torch.cuda.empty_cache()


def peak_mb(device: str) -> float:
    """The most device memory this process's caching allocator has reserved (what admission must cover)."""
    if device == "cpu":
        return 0.0
    import torch

    return round(torch.cuda.max_memory_reserved() / 2**20, 1)


def rep_seeds(seed: int, reps: int) -> list[int]:
    """The seeds of a trial's ``reps`` forwards: the go seed, then seeds derived from it. Public, but
    unknown until go names the seed, and each forward's inputs are drawn only once the last one returned."""
    import hashlib

    derived = (hashlib.blake2b(f"{seed}:{r}".encode(), digest_size=4).digest() for r in range(1, reps))
    return [seed, *(int.from_bytes(d, "little") >> 1 for d in derived)]
