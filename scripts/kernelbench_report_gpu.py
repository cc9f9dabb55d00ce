"""The KernelBench report of the offline agents at real sizes on a GPU, beside the seed's table.

No Dagster or DuckDB: the same report code as the `kernelbench_report` asset (hipforge.bench.report), with the
results written as JSON and markdown (and PNG plots when matplotlib is there).
Usage (GPU machine):
    python scripts/kernelbench_report_gpu.py --source KB.jsonl --levels 1,2 --backend cuda --arch sm_90 \\
        --parallel 8 --out $OUT/report
    python scripts/kernelbench_report_gpu.py --levels 1,2,3 --backend cuda --arch sm_90 --parallel 12 \\
        --out $OUT/library   # the reference library
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.agents.translator.offline import OfflineTranslator  # noqa: E402
from hipforge.bench.report import (  # noqa: E402
    level_rows,
    load_report_tasks,
    report_config,
    run_report,
    task_row,
)
from hipforge.bench.report_tables import levels_markdown, seed_markdown  # noqa: E402
from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.executor import LocalExecutor  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="", help="KernelBench: level folders, a .jsonl file or a dataset id; none: "
                        "the reference library at the sizes its tasks give (single ops L1, fusions L2, blocks L3)")
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--limit", type=int, default=0, help="first N problems of each level (0: all)")
    parser.add_argument("--time-compiled", action="store_true",
                        help="also time torch.compile references (inductor builds each one outside the timing lock)")
    parser.add_argument("--out", type=Path, required=True, help="folder for report.json, report.md and plots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    config = report_config(EvalConfig(backend=args.backend, arch=args.arch, run_timeout_s=300,
                                      time_compiled_ref=args.time_compiled))
    task_set, tasks = load_report_tasks(args.source, [int(x) for x in args.levels.split(",")], args.limit, args.backend)
    started, last = time.monotonic(), [0.0]

    def progress(done: int, total: int, what: str) -> None:
        if done == total or time.monotonic() - last[0] > 15:
            last[0] = time.monotonic()
            print(f"[{time.monotonic() - started:6.0f} s] {done}/{total} {what}", flush=True)

    executor = LocalExecutor(config, args.parallel)
    outcomes = run_report(tasks, OfflineTranslator(), executor, progress)
    rows = [task_row(o) for o in outcomes]
    levels = level_rows(rows)
    text = (f"# offline agents on {task_set} ({args.backend} {args.arch}), {len(rows)} tasks, "
            f"{time.monotonic() - started:.0f} s\n\n{levels_markdown(levels)}\n\n"
            f"{seed_markdown(levels, 'offline', args.backend)}\n")
    print("\n" + text, flush=True)
    (args.out / "report.md").write_text(text)
    messages = {o.task.name: (o.declined or (o.result.message[:300] if o.result else "")) for o in outcomes}
    (args.out / "report.json").write_text(json.dumps(
        {"task_set": task_set, "backend": args.backend, "arch": args.arch, "levels": levels,
         "tasks": [dict(r, message=messages[r["task_name"]]) for r in rows]}, indent=1))
    if importlib.util.find_spec("matplotlib") is None:  # a GPU image without matplotlib still gets the tables
        return
    from hipforge.bench.report_plots import compile_rate_bars, fast_p_curves, report_measured

    (args.out / "compile_rates.png").write_bytes(compile_rate_bars({"offline": levels},
                                                                   measured=report_measured(config)))
    (args.out / "fast_p.png").write_bytes(fast_p_curves({"offline": levels},
                                                        measured=report_measured(config, speedups=True)))


if __name__ == "__main__":
    main()
