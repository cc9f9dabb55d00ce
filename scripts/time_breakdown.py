"""Where a KernelBench task's GPU time goes: eager, under torch.compile and as the offline translator's
kernel. Heavy library kernels (cuBLAS, cuDNN, CUTLASS) against everything else, one profiled forward
each, beside event timings; fp32 without TF32, as the evaluator runs them.

The eager heavy share bounds what fusing the ops around a kept conv/GEMM can win (1 / heavy share), and
the top kernels of each side show where the translator loses. Trusted code only: the problems and
our own translations run in-process, unsandboxed (the cuda backend builds the HIP). Run it alone on the
GPU: inductor autotunes reduction kernels while compiling, and configurations picked on a busy GPU (or
kept in a cache warmed by parallel runs) make torch.compile look slower than it is. Usage (GPU machine):
    python scripts/time_breakdown.py --source KB.jsonl --levels 2 --out $OUT/breakdown.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.bench.kernelbench import load_kernelbench  # noqa: E402
from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.profile.target import load  # noqa: E402
from hipforge.translate import generate  # noqa: E402

# library kernels; inductor's own are named triton_* (after the ops they fuse, "convolution" included)
HEAVY = re.compile(r"^(?!triton_).*(gemm|conv|cudnn|cutlass|cublas|xmma|sm90_|sm80_|wgrad|dgrad|winograd|fft)", re.I)


def event_ms(fn, trials: int) -> float:  # noqa: ANN001
    """Median of `trials` event-timed calls after 3 warm-ups (KernelBench's protocol, no L2 flush)."""
    from hipforge.execution.measure import event_times  # imports torch, as the other helpers do here

    times = event_times(fn, 3, trials)
    return sorted(times)[len(times) // 2]


def kernel_split(fn) -> dict:  # noqa: ANN001
    """Device time of one forward by kernel, split into heavy library kernels and the rest."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        import torch

        torch.cuda.synchronize()
    heavy = other = 0.0
    names: dict[str, float] = {}
    for event in prof.events():
        if event.device_type.name != "CUDA":
            continue
        us = event.device_time
        heavy, other = (heavy + us, other) if HEAVY.search(event.name) else (heavy, other + us)
        names[event.name[:60]] = names.get(event.name[:60], 0.0) + us
    top = sorted(names.items(), key=lambda kv: -kv[1])[:4]
    return {"heavy_ms": heavy / 1e3, "other_ms": other / 1e3, "kernels": len(names),
            "top": [f"{n} {us / 1e3:.3f}" for n, us in top]}


def reference_only(source: str) -> tuple:
    """The task's Model on the GPU and its inputs, for a task the translator declines."""
    import torch

    namespace: dict = {"__name__": "kb_task"}
    exec(compile(source, "<task>", "exec"), namespace)  # noqa: S102  (trusted KernelBench problems)
    torch.manual_seed(0)
    model = namespace["Model"](*namespace["get_init_inputs"]()).cuda()
    return model, [x.cuda() if isinstance(x, torch.Tensor) else x for x in namespace["get_inputs"]()]


def breakdown(source: str, trials: int, cfg: EvalConfig | None) -> dict:
    """Timings and kernel splits of eager and compiled references, and of the translator's kernel when `cfg`
    names the backend to build it with (loaded as the profiler loads verified candidates)."""
    import torch

    row: dict = {}
    ours = None
    if cfg is not None:
        try:
            loaded = load(generate(source).source, source, cfg)
            model, inputs, ours = loaded.reference, loaded.inputs, loaded.model
        except Exception as exc:  # noqa: BLE001  (declined or failed: the other sides still count)
            row["ours_error"] = f"{type(exc).__name__}: {exc}"[:300]
    if ours is None:
        model, inputs = reference_only(source)
    compiled = torch.compile(model)
    sides = {"eager": lambda: model(*inputs), "compiled": lambda: compiled(*inputs)}
    if ours is not None:
        sides["ours"] = lambda: ours(*inputs)
    with torch.no_grad():
        for side, fn in sides.items():
            row[f"{side}_ms"], row[side] = event_ms(fn, trials), kernel_split(fn)
        if ours is not None:
            want, got = sides["eager"](), sides["ours"]()
            row["ours_max_err"] = (want - got).abs().max().item() if want.shape == got.shape else float("inf")
    return row


def main() -> None:
    import torch

    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False  # as the evaluator runs
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--levels", default="2")
    parser.add_argument("--only", default="", help="keep only problems whose task name matches this regex")
    parser.add_argument("--shard", default="0/1", help="K/N: every N-th problem from the K-th (parallel runs)")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--ours", action="store_true", help="also the offline translator's kernels (cuda backend)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    problems = [p for p in load_kernelbench(args.source, [int(x) for x in args.levels.split(",")])
                if re.search(args.only, p.task_name)]
    shard, shards = (int(x) for x in args.shard.split("/"))
    problems = problems[shard::shards]
    cfg = EvalConfig(backend="cuda", arch="sm_90") if args.ours else None
    rows = {}
    print(f"{'task':<58}{'eager':>9}{'compile':>9}{'ours':>9}{'heavy%':>8}{'bound':>7}{'comp.x':>7}{'ours.x':>7}")
    for p in problems:
        try:
            row = breakdown(p.source, args.trials, cfg)
            torch.cuda.empty_cache()  # the task's model and inputs are gone with breakdown's frame
        except Exception as exc:  # noqa: BLE001  (report the task and go on)
            rows[p.task_name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            print(f"{p.task_name[:57]:<58} error {rows[p.task_name]['error'][:80]}", flush=True)
            continue
        rows[p.task_name] = row
        e = row["eager"]
        share = e["heavy_ms"] / max(e["heavy_ms"] + e["other_ms"], 1e-9)
        ours = row.get("ours_ms", float("nan"))
        print(f"{p.task_name[11:68]:<58}{row['eager_ms']:>9.3f}{row['compiled_ms']:>9.3f}{ours:>9.3f}{share:>8.0%}"
              f"{1 / max(share, 1e-3):>7.2f}{row['eager_ms'] / row['compiled_ms']:>7.2f}{row['eager_ms'] / ours:>7.2f}",
              flush=True)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
