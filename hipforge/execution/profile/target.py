"""Load a candidate and run its forward for a profiler: ``python -m hipforge.execution.profile.target job.json``.

Modes: ``profile`` warms the forward up, then runs it once between cudaProfilerStart/Stop (what ncu's
``--profile-from-start off`` records) inside a ``hipforge-forward`` range with a device sync (what the
rocprofv3 parser cuts the trace with); ``work`` prints the work split of one forward as JSON (work.py).
Only candidates the executor already verified should come here: this process is not the sandbox.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import asdict, dataclass
from typing import Any

from hipforge.execution.config import EvalConfig
from hipforge.execution.profile.signals import MARKER
from hipforge.execution.profile.work import Tracer, WorkSplit, reference_work


@dataclass
class Loaded:
    model: Any  # ModelNew, with the reference's weights where names and shapes agree
    reference: Any
    inputs: list[Any]
    device: str


def load(candidate_source: str, task_source: str, cfg: EvalConfig, wrap: Any = None, seed: int = 0) -> Loaded:
    """Build ``ModelNew`` through the backend's ``load_inline`` (``wrap`` sees each extension module)."""
    import torch
    import torch.utils.cpp_extension

    from hipforge.execution.backend import make_backend  # imports torch

    backend = make_backend(cfg)
    device = backend.torch_device
    if device == "cuda":  # as the executor runs fp32 references
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        module = backend.load_inline(*args, **kwargs)
        return wrap(module) if wrap else module

    torch.utils.cpp_extension.load_inline = load_inline
    task = _module("hipforge_profile_task", task_source)
    candidate = _module("candidate", candidate_source)
    init = task.get_init_inputs()
    torch.manual_seed(cfg.init_seed)
    reference = task.Model(*init).to(device)
    torch.manual_seed(cfg.init_seed)
    model = candidate.ModelNew(*init)
    ref_state, new_state = reference.state_dict(), model.state_dict()
    model.load_state_dict({k: v for k, v in ref_state.items() if k in new_state and new_state[k].shape == v.shape},
                          strict=False)
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    return Loaded(model.to(device), reference, inputs, device)


def work_split(candidate_source: str, task_source: str, cfg: EvalConfig) -> WorkSplit:
    """The work split of one forward (after a warm-up, so lazy initialisation is not counted)."""
    import torch

    tracer = Tracer()
    loaded = load(candidate_source, task_source, cfg, wrap=tracer.wrap)
    with torch.no_grad():
        loaded.model(*loaded.inputs)
        tracer.split = reference_work(loaded.reference, loaded.inputs)
        with tracer.trace():
            loaded.model(*loaded.inputs)
    return tracer.split


def profile_once(loaded: Loaded, warmup: int = 3) -> None:
    import torch

    with torch.no_grad():
        for _ in range(warmup):
            loaded.model(*loaded.inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        torch.cuda.nvtx.range_push(MARKER)
        loaded.model(*loaded.inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        torch.cuda.profiler.stop()


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def main(job_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    cfg = EvalConfig.from_dict(job["config"])
    if job["mode"] == "work":
        split = work_split(job["candidate_source"], job["task_source"], cfg)
        print("HIPFORGE-WORK " + json.dumps(asdict(split)), flush=True)
    elif job["mode"] == "profile":
        profile_once(load(job["candidate_source"], job["task_source"], cfg))
    else:
        raise ValueError(f"unknown mode {job['mode']!r}: expected 'work' or 'profile'")


if __name__ == "__main__":
    main(sys.argv[1])
