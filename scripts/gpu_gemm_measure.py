"""The measuring half of scripts/gpu_gemm_bench.py: one child process, GPU work only.

Reads a job file (problems, each with its candidates), and for each problem builds the reference Model
and inputs on the GPU, then each candidate's ModelNew through the cuda backend's load_inline (the build
cache holds what the parent's workers compiled), checks it against the reference on two seeds
(allclose atol = rtol = 1e-4) and times both as KernelBench does. Writes one JSON line per event to the
result file as it goes ("start" before a candidate, its row after), so the parent can tell which
candidate a crash (an illegal memory access ends the CUDA context) took down and start again after it.
    python scripts/gpu_gemm_measure.py JOB.json RESULT.jsonl
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.utils.cpp_extension

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.execution.cuda import CudaBackend  # noqa: E402
from hipforge.execution.measure import event_times  # noqa: E402

SEEDS = (0, 1)
FLUSH_BYTES = 256 << 20  # KernelBench's L2 flush: write 256 MB before each trial


def module(name: str, source: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), mod.__dict__)  # noqa: S102 - our own translator's output
    return mod


def contraction(inputs: list[torch.Tensor], out: torch.Tensor) -> int:
    """K of C = A @ B from the sizes alone (transposes keep them): K^2 = |A| |B| / (|C| * B's batch)."""
    a, b = inputs[0], inputs[1]
    batch = b.shape[0] if b.dim() == 3 else 1
    return round(math.sqrt(a.numel() * b.numel() / (out.numel() * batch)))


def measure_problem(problem: dict[str, Any], emit: Callable[[dict[str, Any]], None], flush: torch.Tensor,
                    warmup: int, trials: int) -> None:
    task = module(f"task_{problem['id']}", problem["code"])
    init = task.get_init_inputs()
    torch.manual_seed(42)
    reference = task.Model(*init).cuda().eval()
    seeded = []
    for seed in SEEDS:
        torch.manual_seed(seed)
        with torch.device("cuda"), torch.no_grad():
            inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
            seeded.append((inputs, reference(*inputs)))
    inputs, out = seeded[0]
    k = contraction(inputs, out)
    flops = 2.0 * out.numel() * k
    shape = " x ".join(str(tuple(x.shape)) for x in inputs if isinstance(x, torch.Tensor)) + f" -> {tuple(out.shape)}"
    with torch.no_grad():
        ref_ms = statistics.median(event_times(lambda: reference(*inputs), warmup, trials, flush))
    base = {"problem": problem["id"], "name": problem["name"], "shape": shape, "K": k, "torch_ms": ref_ms,
            "torch_tflops": flops / ref_ms / 1e9}
    for cand in problem["candidates"]:
        emit({"event": "start", "problem": problem["id"], "label": cand["label"]})
        row = {**base, "label": cand["label"], "gemm_tile": cand["gemm_tile"], "split_k": cand["split_k"]}
        try:
            mod = module(f"cand_{problem['id']}_{cand['index']}", cand["source"])
            torch.manual_seed(42)
            model = mod.ModelNew(*init).cuda().eval()
            model.load_state_dict(reference.state_dict(), strict=False)
            errors = []
            with torch.no_grad():
                for x, ref in seeded:
                    got = model(*x)
                    torch.cuda.synchronize()
                    errors.append((got - ref).abs().max().item())
                    if got.shape != ref.shape or not torch.allclose(got, ref, atol=1e-4, rtol=1e-4):
                        raise AssertionError(f"mismatch: shape {tuple(got.shape)}, max abs error {errors[-1]:.3g}")
                    del got
                times = event_times(lambda m=model: m(*inputs), warmup, trials, flush)
            ours = statistics.median(times)
            row |= {"status": "ok", "max_abs_err": max(errors), "ours_ms": ours, "ours_tflops": flops / ours / 1e9,
                    "ratio": ref_ms / ours, "ours_ms_min": min(times), "ours_ms_max": max(times)}
        except Exception as exc:  # noqa: BLE001 - one failed candidate is reported, the rest still run
            row |= {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:1500]}
        emit({"event": "row", **row})
        torch.cuda.empty_cache()


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text())
    result = Path(sys.argv[2])
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 references, as the evaluator runs them
    torch.backends.cudnn.allow_tf32 = False
    backend = CudaBackend(arch=job["arch"])
    torch.utils.cpp_extension.load_inline = backend.load_inline  # as the cuda backend builds candidates
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")

    def emit(event: dict[str, Any]) -> None:
        with result.open("a") as f:
            f.write(json.dumps(event) + "\n")

    for problem in job["problems"]:
        try:
            measure_problem(problem, emit, flush, job["warmup"], job["trials"])
        except Exception as exc:  # noqa: BLE001 - the reference itself failed: every candidate of it says so
            for cand in problem["candidates"]:
                emit({"event": "row", "problem": problem["id"], "name": problem["name"], "label": cand["label"],
                      "gemm_tile": cand["gemm_tile"], "split_k": cand["split_k"], "status": "failed",
                      "error": f"reference: {type(exc).__name__}: {exc}"[:1500]})
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
