"""How far a cpu-backend speedup moves between evaluations of the same kernel while other work comes and goes
on the cores, before and after paired timing (issue 22; hipforge/execution/pairing.py).

Each column evaluates the same honest kernels several times, alternately under background load (g++ compiles,
one loop per core: under the evaluator's build hold, as other evaluations' builds take it, or with --load
foreign outside it, as other jobs on the machine run) and on quiet cores, with a build and baseline cache of
its own. "before" runs the code of an earlier commit (by default the one
before pairing.py was added: the reference timed in a window of its own, or taken from the baseline cache the
first evaluation filled); "after" runs this tree's. Each prints, per kernel, its speedup over eager per run
and their spread (max / min). Not a test: it takes minutes and its numbers are the machine's.
Usage: .venv/bin/python scripts/bench_cpu_pairing.py [--kernels relu,softmax] [--runs 4] [--load foreign]
       [--before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNELS = ("relu", "softmax", "row_sum", "gelu", "matmul")
# a translation unit heavy enough that g++ spends most of its time in the front end and optimizer, as a
# candidate's build does
LOAD_SOURCE = "#include <bits/stdc++.h>\nint main() { std::vector<int> v(9); std::sort(v.begin(), v.end()); }\n"


def compiles(stop: threading.Event, held: bool) -> None:
    """g++ after g++ until ``stop``; ``held``: each under the evaluator's build hold, as its build jobs take it
    (hipforge.execution.quiet.building: shares the cores with builds, never with a timed phase)."""
    from hipforge.execution import quiet

    while not stop.is_set():
        with quiet.building() if held else nullcontext():
            subprocess.run(["g++", "-O2", "-x", "c++", "-", "-o", os.devnull], input=LOAD_SOURCE.encode(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextmanager
def background_load(kind: str) -> Iterator[None]:
    """One compile loop per core: "builds" take the evaluator's build hold (other evaluations' builds, the
    issue's case), "foreign" do not (other jobs on the machine); "" is none."""
    stop = threading.Event()
    loops = [threading.Thread(target=compiles, args=(stop, kind == "builds"), daemon=True)
             for _ in range(os.cpu_count() or 1 if kind else 0)]
    for loop in loops:
        loop.start()
    try:
        yield
    finally:
        stop.set()
        for loop in loops:
            loop.join()


def worker(kernels: list[str], runs: int, load: str) -> dict[str, list[dict[str, float | None]]]:
    """This process's hipforge (the tree on sys.path first) evaluates each kernel ``runs`` times; even runs
    under load. A cache dir of its own: the baseline cache (where the code has one) starts empty."""
    import hipforge
    from hipforge.execution.config import EvalConfig
    from hipforge.execution.evaluate import evaluate, shutdown
    from tests.corpus import entries

    print(f"hipforge from {Path(hipforge.__file__).parent}", file=sys.stderr)
    honest = {e.name: e for e in entries("honest")}
    cache = tempfile.mkdtemp(prefix="hipforge-bench-pairing-")
    os.chmod(cache, 0o777)  # the sandbox user builds there
    config = EvalConfig(gate=False, adversarial=False, second_size=False, cache_dir=cache)
    rows: dict[str, list[dict[str, float | None]]] = {k: [] for k in kernels}
    try:
        for run in range(runs):
            with background_load(load if run % 2 == 0 else ""):
                for name in kernels:
                    entry = honest[name]
                    result = evaluate(entry.candidate_source, entry.task_source, config)
                    rows[name].append({
                        "load": run % 2 == 0, "speedup": result.speedup_eager,
                        "ref_ms": result.ref_eager.min_ms if result.ref_eager else None,
                        "cand_ms": result.runtime.min_ms if result.runtime else None,
                        "verdict": result.verdict.value,
                        "bounded": result.integrity.get("cpu_claims_bounded")})  # where the code records it
                    print(f"  run {run} {name}: {json.dumps(rows[name][-1])}", file=sys.stderr)
    finally:
        shutdown()
        shutil.rmtree(cache, ignore_errors=True)
    return rows


def before_rev() -> str:
    """The commit before paired timing came (the parent of the one that added pairing.py), else HEAD."""
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "hipforge/execution/pairing.py"],
                           cwd=REPO, capture_output=True, text=True).stdout.split()
    return f"{added[-1]}~1" if added else "HEAD"


def column(tree: Path, kernels: list[str], runs: int, load: str) -> dict[str, list[dict[str, float | None]]]:
    """The worker run with ``tree``'s hipforge (its sandbox jobs follow: they import from the same root)."""
    command = [sys.executable, __file__, "--worker", "--kernels", ",".join(kernels), "--runs", str(runs),
               "--load", load]
    env = {**os.environ, "BENCH_TREE": str(tree)}
    out = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def export(rev: str) -> Path:
    """The code of ``rev`` (hipforge/ and the test corpus) in a temporary tree; git's state is left alone."""
    tree = Path(tempfile.mkdtemp(prefix="hipforge-bench-before-"))
    os.chmod(tree, 0o755)  # the sandbox user imports from it
    archive = subprocess.run(["git", "archive", rev, "hipforge", "tests"], cwd=REPO, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def spread(rows: list[dict[str, float | None]]) -> float | None:
    values = [r["speedup"] for r in rows if r["speedup"]]
    return max(values) / min(values) if len(values) == len(rows) and values else None


def table(before: dict[str, list[dict[str, float | None]]], after: dict[str, list[dict[str, float | None]]],
          rev: str, load: str) -> str:
    def speedups(rows: list[dict[str, float | None]]) -> str:
        return " ".join(f"{r['speedup']:.3g}{'*' if r['load'] else ''}" if r["speedup"] else r["verdict"]
                        for r in rows)

    def fmt(value: float | None) -> str:
        return f"{value:.2f}x" if value else "-"

    lines = [f"cpu speedup over eager per run (* = under {load} compiles, one loop per core); before = {rev}, "
             f"after = this tree",
             f"{'kernel':<9} {'before: speedups':<34} {'spread':>7}   {'after: speedups':<34} {'spread':>7}"]
    for name in before:
        lines.append(f"{name:<9} {speedups(before[name]):<34} {fmt(spread(before[name])):>7}   "
                     f"{speedups(after[name]):<34} {fmt(spread(after[name])):>7}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default=",".join(KERNELS[:3]))
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--before", default=None, help="the commit whose code makes the before column")
    parser.add_argument("--load", choices=("builds", "foreign"), default="builds",
                        help="builds: compiles under the evaluator's build hold; foreign: outside it")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    kernels = args.kernels.split(",")
    if args.worker:
        print(json.dumps(worker(kernels, args.runs, args.load)))
        return
    rev = args.before or before_rev()
    tree = export(rev)
    try:
        before = column(tree, kernels, args.runs, args.load)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    after = column(REPO, kernels, args.runs, args.load)
    print(table(before, after, rev, args.load))


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("BENCH_TREE") or str(REPO))
    main()
