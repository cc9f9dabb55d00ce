"""Profile verified kernels and a deliberately lazy candidate on a GPU with Nsight Compute.

Candidates: the archive's best kernels (exported here with ``--export``, since the GPU machine has no
DuckDB) or the offline translator's kernels for a few reference-library tasks, plus a lazy candidate
(ATen runs the GEMM and bias, a HIP kernel only the ReLU). Each is verified and timed on the executor,
then one forward is profiled under ncu: time coverage (our kernels vs ATen/cuBLAS), DRAM bandwidth and
FLOP rate as shares of the measured peaks, occupancy, top stall reason, bottleneck; beside it the
profiler-free estimate. The lazy candidate is scored by the reward with and without the coverage term.
Writes JSON and one roofline PNG per level (or library category).
    python scripts/profile_gpu.py --export warehouse/exports/archive_best.jsonl          # here
    python scripts/profile_gpu.py --candidates warehouse/exports/archive_best.jsonl --out $OUT   # GPU
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.agents.base import AgentTask, Declined  # noqa: E402
from hipforge.agents.translator.offline import OfflineTranslator  # noqa: E402
from hipforge.bench.plots_roofline import RooflinePoint, roofline_by_level  # noqa: E402
from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.evaluate import evaluate_many  # noqa: E402
from hipforge.execution.profile.lazy import reject_lazy  # noqa: E402
from hipforge.execution.profile.peaks import device_peaks  # noqa: E402
from hipforge.execution.profile.run import ProfileError, profile_candidate  # noqa: E402
from hipforge.execution.profile.signals import Profile  # noqa: E402
from hipforge.execution.verdict import EvalResult, Verdict  # noqa: E402
from hipforge.tasks.library import library_task  # noqa: E402
from hipforge.tasks.source import task_id  # noqa: E402
from hipforge.train.reward import RewardRule  # noqa: E402
from tests.corpus import entries  # noqa: E402

TASKS = "elementwise/gelu_tanh,reductions/softmax,gemm/linear_bias_relu"
LAZY_TASK = "gemm/linear_bias_relu"
FUSED_FORWARD = ("y = torch.nn.functional.linear(x, self.linear.weight)\n"
                 "        return elementwise.bias_act(y, self.linear.bias, 1, 0)")
LAZY_FORWARD = "return elementwise.unary(self.linear(x), 0, 0.0)  # ReLU only"
Item = dict[str, Any]  # name, level, candidate, task


def lazy_candidate() -> str:
    """The corpus's Linear + ReLU candidate made lazy: ATen runs the GEMM and the bias, the HIP kernel only
    the ReLU (op 0 of the corpus's elementwise kernel)."""
    fused = next(e for e in entries() if e.name == "linear_relu_fused").candidate_source
    lazy = fused.replace(FUSED_FORWARD, LAZY_FORWARD)
    if lazy == fused:
        raise RuntimeError("tests/corpus/honest/linear_relu_fused.py changed: its forward is not the expected one")
    return lazy


def export_archive(path: Path, limit: int) -> None:
    """The ``limit`` fastest per-task best kernels of the warehouse's archive, with their tasks, as JSONL."""
    from hipforge.agents.archive import KernelArchive  # DuckDB: only here, never on the GPU machine
    from hipforge.paths import default_warehouse_path
    from hipforge.store import Warehouse
    from hipforge.store.tasks import task_descriptions

    warehouse = Warehouse(default_warehouse_path())
    best = sorted(KernelArchive(warehouse).per_task_best(), key=lambda r: -(r["speedup_eager"] or 0.0))[:limit]
    tasks = task_descriptions(warehouse)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for row in best:
            name, level, category, source = tasks[row["task_id"]]
            f.write(json.dumps({"name": name, "level": str(level or category or "?"), "candidate": row["source"],
                                "task": source}) + "\n")
    print(f"wrote {len(best)} archive kernels to {path}")


def translated(names: str) -> list[Item]:
    items = []
    for name in names.split(","):
        task = library_task(name)
        made = OfflineTranslator().translate(AgentTask(task_id(task.source), name, task.source), [])
        if isinstance(made, Declined):
            print(f"{name}: the translator declines: {made.reason}")
            continue
        items.append({"name": f"{name} [{made.params['strategy']}]", "level": task.category,
                      "candidate": made.source, "task": task.source})
    return items


def pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{100 * x:5.1f}%"


def row(name: str, result: EvalResult, found: Profile | None, estimated: Profile | None) -> str:
    speedup = f"{result.speedup_eager:6.2f}x" if result.speedup_eager is not None else "    n/a"
    if found is None:
        return f"{name:<40} {result.verdict.value:<13} {speedup} {result.message[:80]}"
    occupancy = "  n/a" if found.occupancy_pct is None else f"{found.occupancy_pct:4.0f}%"
    guess = f"  est. coverage {pct(estimated.coverage)} {estimated.bottleneck}" if estimated else ""
    return (f"{name:<40} {result.verdict.value:<8} {speedup} cov {pct(found.coverage)} bw {pct(found.bandwidth_share)}"
            f" flop {pct(found.flop_share)} occ {occupancy} {found.stall or '-':<18} {found.bottleneck:<13} "
            f"{len(found.kernels)} kernels{guess}")


def profile_all(items: list[Item], results: dict[int, EvalResult], config: EvalConfig, peaks: Any,
                tool: str | None, with_estimate: bool) -> tuple[list[dict[str, Any]], list[RooflinePoint]]:
    records, points = [], []
    for i, item in enumerate(items):
        result, found, estimated, error = results[i], None, None, None
        if result.verdict == Verdict.CORRECT:
            runtime = result.runtime.median_ms if result.runtime else None
            try:
                found = profile_candidate(item["candidate"], item["task"], config, peaks, runtime_ms=runtime, tool=tool)
                if tool and with_estimate:
                    estimated = profile_candidate(item["candidate"], item["task"], config, peaks, runtime_ms=runtime,
                                                  tool=None)
            except (ProfileError, ValueError) as e:  # one candidate's failure must not end the run
                error = str(e)
                print(f"{item['name']}: profiling failed: {error}", flush=True)
        print(row(item["name"], result, found, estimated), flush=True)
        if found and (point := RooflinePoint.from_profile(item["name"].split(" ")[0], item["level"], found)):
            points.append(point)
        records.append({"name": item["name"], "level": item["level"], "verdict": result.verdict.value,
                        "message": result.message[:300], "speedup_eager": result.speedup_eager,
                        "profile": found.to_dict() if found else None,
                        "estimate": estimated.to_dict() if estimated else None, "error": error})
    return records, points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--export", type=Path, help="write the archive's best kernels to this JSONL file and stop")
    parser.add_argument("--candidates", type=Path, help="JSONL from --export (default: translate --tasks)")
    parser.add_argument("--limit", type=int, default=5, help="archive kernels to export or profile")
    parser.add_argument("--tasks", default=TASKS, help="comma-separated reference-library task names")
    parser.add_argument("--tool", default="ncu", help="ncu | rocprofv3 | none (estimate only)")
    parser.add_argument("--no-estimate", action="store_true", help="skip the profiler-free estimate beside ncu")
    parser.add_argument("--timed-trials", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    if args.export:
        export_archive(args.export, args.limit)
        return
    started = time.monotonic()
    peaks = device_peaks("cpu" if args.backend == "cpu" else "cuda")
    print(f"peaks of {peaks.device} ({peaks.source}): {peaks.bandwidth / 1e12:.2f} TB/s, "
          f"{peaks.flops / 1e12:.1f} TFLOP/s fp32 [{time.monotonic() - started:.0f} s]", flush=True)
    if args.candidates:
        items = [json.loads(line) for line in args.candidates.read_text().splitlines() if line.strip()][:args.limit]
    else:
        items = translated(args.tasks)
    lazy_task = library_task(LAZY_TASK)
    items.append({"name": f"{LAZY_TASK} [lazy]", "level": lazy_task.category, "candidate": lazy_candidate(),
                  "task": lazy_task.source})
    config = EvalConfig(backend=args.backend, arch=args.arch, timed_trials=args.timed_trials,
                        time_compiled_ref=False, run_timeout_s=300)
    results = dict(evaluate_many([(i["candidate"], i["task"]) for i in items], config, parallel=4))
    print(f"{len(items)} evaluated [{time.monotonic() - started:.0f} s]", flush=True)
    tool = None if args.tool == "none" else args.tool
    records, points = profile_all(items, results, config, peaks, tool, not args.no_estimate)
    lazy_result, lazy = results[len(items) - 1], records[-1]["profile"] or records[-1]["estimate"]
    if lazy_result.verdict == Verdict.CORRECT and lazy:
        plain, with_coverage = RewardRule(), RewardRule(coverage_weight=0.5, reject=reject_lazy)
        print(f"\nlazy candidate: speedup {lazy_result.speedup_eager:.3f}x, coverage {lazy['coverage']:.3f} "
              f"({lazy['source']}); reward without the coverage term {plain(lazy_result):.3f}, "
              f"with it {with_coverage(lazy_result, lazy['coverage']):.3f}")
    args.out.mkdir(parents=True, exist_ok=True)
    for level, png in roofline_by_level(points, peaks, f"roofline on {peaks.device}").items():
        (args.out / f"roofline_{level}.png").write_bytes(png)
    (args.out / "profile_gpu.json").write_text(json.dumps({"peaks": asdict(peaks), "rows": records}, indent=1))
    print(f"done in {time.monotonic() - started:.0f} s; wrote {args.out}/profile_gpu.json and roofline PNGs")


if __name__ == "__main__":
    main()
