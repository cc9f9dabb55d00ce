"""The evaluator's test corpus (honest, buggy, deceptive) through one backend, at two sizes.

"corpus" is each task as the CPU tests run it; "kernelbench" swaps in KernelBench-scale inputs
(L1 shapes; 393216-wide rows cut to 65536 to fit a device-time budget). Prints one row per entry
and writes JSON. Usage on the GPU machine:
    python scripts/gpu_corpus.py --backend cuda --arch sm_90 --out $OUT/corpus.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.evaluate import evaluate_many  # noqa: E402
from tests.corpus import Entry, entries  # noqa: E402

ROWS = "[torch.randn(4096, 65536)]"
KERNELBENCH_INPUTS = {  # task -> get_inputs() list at KernelBench scale
    **dict.fromkeys(["relu", "leaky_relu", "sigmoid", "tanh", "gelu", "swish", "scale",
                     "row_sum", "row_max", "row_mean", "softmax", "l2norm"], ROWS),
    "relu_rand": "[torch.rand(4096, 65536)]",
    "add": "[torch.randn(4096, 65536), torch.randn(4096, 65536)]",
    "conv_relu": "[torch.randn(128, 3, 256, 256)]",
}
KERNELBENCH_CONSTANTS = {  # task -> module-level constants at KernelBench scale
    "matmul": {"M, K, N": "4096, 4096, 4096"},
    "linear_relu": {"batch_size": "1024", "in_features": "8192", "out_features": "8192"},
}


def at_kernelbench_scale(task: str, source: str) -> str:
    if task in KERNELBENCH_INPUTS:
        source = re.sub(r"(def get_inputs\(\):\n\s+return ).*", rf"\g<1>{KERNELBENCH_INPUTS[task]}", source)
    for name, value in KERNELBENCH_CONSTANTS.get(task, {}).items():
        source = re.sub(rf"^{re.escape(name)} = .*$", f"{name} = {value}", source, flags=re.M)
    return source


def expected(entry: Entry) -> str:
    if entry.kind == "honest":
        return "correct"
    return entry.verdict or f"hacked:{entry.label}"


def got(result) -> str:
    return f"hacked:{result.hack_check}" if result.verdict.value == "hacked" else result.verdict.value


def run(corpus: list[Entry], scale: str, config: EvalConfig, parallel: int) -> list[dict]:
    items = [(e.candidate_source, e.task_source if scale == "corpus" else at_kernelbench_scale(e.task, e.task_source))
             for e in corpus]
    rows: list[dict] = [{} for _ in corpus]
    for index, result in evaluate_many(items, config, parallel=parallel):
        entry = corpus[index]
        rows[index] = {"scale": scale, "kind": entry.kind, "name": entry.name, "task": entry.task,
                       "expected": expected(entry), "got": got(result), "message": result.message[:200],
                       "runtime_ms": result.runtime.typical_ms(result.backend) if result.runtime else None,
                       "eager_ms": result.ref_eager.typical_ms(result.backend) if result.ref_eager else None,
                       "speedup": result.speedup_eager, "seconds": result.seconds}
        print(f"{scale:<11} {entry.kind:<9} {entry.name:<28} expected {rows[index]['expected']:<30} "
              f"got {rows[index]['got']:<30} {result.seconds:6.1f}s", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--scales", default="corpus,kernelbench")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--timed-trials", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = EvalConfig(backend=args.backend, arch=args.arch, timed_trials=args.timed_trials,
                        time_compiled_ref=False, run_timeout_s=300)
    corpus = entries()
    rows: list[dict] = []
    started = time.monotonic()
    for scale in args.scales.split(","):
        rows += run(corpus, scale, config, args.parallel)
    print(f"\n{len(rows)} evaluations in {time.monotonic() - started:.0f} s")
    for scale in args.scales.split(","):
        mine = [r for r in rows if r["scale"] == scale]
        agree = sum(r["expected"] == r["got"] for r in mine)
        honest_ok = sum(r["got"] == "correct" for r in mine if r["kind"] == "honest")
        caught = sum(r["got"] != "correct" for r in mine if r["kind"] == "deceptive")
        print(f"{scale}: {agree}/{len(mine)} as expected; honest correct {honest_ok}/"
              f"{sum(r['kind'] == 'honest' for r in mine)}; deceptive rejected {caught}/"
              f"{sum(r['kind'] == 'deceptive' for r in mine)}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
