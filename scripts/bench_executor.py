"""Executor throughput and timing stability, printed side by side in one run (GPU machine).

1. cold evaluation: one fresh candidate (empty compile cache): build, 5 correctness seeds, 100 timed
   trials, wall seconds;
2. one evaluation with every request of the parent timed, by party and op;
3. evaluations per minute for a batch of distinct candidates with a cold and then a warm cache;
4. run-to-run spread (coefficient of variation over 10 repeats) of our timing of one kernel next to
   triton.testing.do_bench on the same kernel.
Usage: python scripts/bench_executor.py --backend cuda --arch sm_90 --candidates 24 --parallel 8
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.evaluate import evaluate, evaluate_many  # noqa: E402
from scripts.gpu_corpus import at_kernelbench_scale  # noqa: E402
from tests.corpus import ROOT, entries  # noqa: E402

ELEMENTWISE_TASKS = {"relu", "leaky_relu", "sigmoid", "tanh", "gelu", "swish", "scale", "add"}


def distinct_candidates(count: int) -> list[tuple[str, str]]:
    """Honest elementwise candidates at KernelBench scale, each with a unique HIP source (no cache hits)."""
    honest = [e for e in entries("honest") if e.task in ELEMENTWISE_TASKS]
    items = []
    for i in range(count):
        entry = honest[i % len(honest)]
        marker = f'r"""// benchmark variant {uuid.uuid4().hex}\n'
        items.append((entry.candidate_source.replace('r"""', marker, 1),
                      at_kernelbench_scale(entry.task, entry.task_source)))
    return items


def per_minute(items: list[tuple[str, str]], config: EvalConfig, parallel: int) -> tuple[float, list[str], dict]:
    """(evaluations a minute, their verdicts, the mean seconds of each stage and device phase)."""
    started = time.monotonic()
    verdicts, spent = [], []
    for _, r in evaluate_many(items, config, parallel=parallel):  # each as it ends: where a slow batch stalls
        verdicts.append(r.verdict.value)
        spent.append(where_it_went(r.integrity or {}))
        integrity = r.integrity or {}
        print(f"    {len(verdicts):>3} at {time.monotonic() - started:6.1f} s: {r.verdict.value}, {r.seconds:.1f} s "
              f"wall, {integrity.get('timed_reps', '-')} forwards per timed trial; "
              + " ".join(f"{k} {v:.1f}" for k, v in spent[-1].items() if v >= 0.05), flush=True)
        print(f"        peak MB {integrity.get('peak_mb')}, clock {integrity.get('seen_ms')} seen / "
              f"{integrity.get('noop_ms')} "
              f"noop ms, rerun: {integrity.get('rerun')}"
              + ("" if r.verdict.value == "correct" else f"\n        {r.hack_check}: {r.message[:400]}"), flush=True)
    means = {k: round(statistics.fmean(s.get(k, 0.0) for s in spent), 3) for k in spent[0]} if spent else {}
    return len(items) / (time.monotonic() - started) * 60, verdicts, means


def where_it_went(integrity: dict) -> dict[str, float]:
    """An evaluation's seconds by stage, and by device phase: waiting for its hold, then holding it."""
    phases = {f"{kind}_{part}": seconds for kind, row in (integrity.get("device_phases") or {}).items()
              for part, seconds in row.items()}
    return {**(integrity.get("stages_s") or {}), **phases}


def spread(samples: list[float]) -> dict[str, float]:
    mean = statistics.fmean(samples)
    return {"median_ms": statistics.median(samples), "cv": statistics.stdev(samples) / mean}


def timing_stability(config: EvalConfig, repeats: int) -> dict[str, dict[str, float]]:
    import torch
    from triton.testing import do_bench

    from hipforge.execution.cuda.backend import CudaBackend
    from hipforge.execution.measure import time_callable

    module = CudaBackend(arch=config.arch).load_inline(
        "bench_elementwise", cpp_sources=(ROOT / "kernels" / "elementwise.hip").read_text(), functions=["unary"])
    x = torch.randn(4096, 65536, device="cuda")

    def relu() -> object:
        return module.unary(x, 0, 0.0)

    ours = [time_callable(lambda _: relu(), config, "cuda", lambda: [])["median_ms"] for _ in range(repeats)]
    triton = [do_bench(relu, warmup=25, rep=100, return_mode="median") for _ in range(repeats)]
    return {"hipforge": spread(ours), "triton.do_bench": spread(triton)}


def breakdown(items: list[tuple[str, str]], config: EvalConfig) -> dict[str, dict[str, float]]:
    """One evaluation with every request the parent makes timed, by party and op: where an evaluation's
    locked phase goes."""
    from collections import defaultdict

    from hipforge.execution import party

    spent: dict[str, list[float]] = defaultdict(list)
    ask = party.Party.ask

    def timed(self: party.Party, message: dict, expect: str) -> dict:
        started = time.monotonic()
        try:
            return ask(self, message, expect)
        finally:
            spent[f"{self.name}:{message.get('op')}"].append(time.monotonic() - started)

    party.Party.ask = timed
    try:
        result = evaluate(*items[0], config)
    finally:
        party.Party.ask = ask
    print(f"  one evaluation, every request timed: {result.seconds:.1f} s wall ({result.verdict.value})")
    table = {k: {"calls": len(v), "total_s": round(sum(v), 3), "mean_ms": round(sum(v) / len(v) * 1e3, 2)}
             for k, v in sorted(spent.items(), key=lambda kv: -sum(kv[1]))}
    for k, row in table.items():
        print(f"    {k:<28}{row['calls']:>6}{row['total_s']:>9.2f} s{row['mean_ms']:>9.2f} ms")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--candidates", type=int, default=24)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--breakdown-only", action="store_true", help="stop after the timed requests of one")
    args = parser.parse_args()
    config = EvalConfig(backend=args.backend, arch=args.arch, time_compiled_ref=False,
                        cache_dir=tempfile.mkdtemp(prefix="hipforge-bench-cache-"))
    report: dict[str, object] = {}

    def done(line: str) -> None:  # each stage as it ends: a run cut short still says what it measured
        print(line, flush=True)
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))

    print(f"backend {args.backend} {args.arch}, {args.candidates} distinct candidates, {args.parallel} in flight")
    warmup = evaluate(*distinct_candidates(1)[0], config)  # starts the sandbox server, builds shared runtime
    report["setup_seconds"] = warmup.seconds
    done(f"  one-time setup (sandbox server, shared runtime): {warmup.seconds:.1f} s")
    single = evaluate(*distinct_candidates(1)[0], config)
    report["cold_eval_seconds"], report["cold_eval_verdict"] = single.seconds, single.verdict.value
    report["cold_eval_stages"] = where_it_went(single.integrity or {})
    report["cold_eval_message"] = single.message[:600]
    done(f"  cold evaluation, one candidate:  {single.seconds:.1f} s wall ({single.verdict.value}): "
         + ", ".join(f"{k} {v:.2f}" for k, v in report["cold_eval_stages"].items())
         + ("" if single.verdict.value == "correct" else f"\n    {single.hack_check}: {single.message[:600]}"))

    report["breakdown"] = breakdown(distinct_candidates(1), config)
    done("")
    if args.breakdown_only:
        return
    items = distinct_candidates(args.candidates)
    verdicts: dict[str, list[str]] = {}
    for cache in ("cold", "warm"):
        rate, found, means = per_minute(items, config, args.parallel)
        report[f"{cache}_per_minute"], report[f"{cache}_mean_seconds"] = rate, means
        verdicts[cache] = sorted(set(found))
        report["verdicts"] = verdicts
        done(f"  evaluations / minute, {cache} cache: {rate:.1f} ({', '.join(verdicts[cache])}); mean seconds: "
             + ", ".join(f"{k} {v:.2f}" for k, v in means.items()))
    report["timing"] = timing = timing_stability(config, args.repeats)
    print(f"  {'timing of one kernel':<22}{'median ms':>12}{'CV (10x)':>12}")
    for name, stats in timing.items():
        print(f"  {name:<22}{stats['median_ms']:>12.4f}{stats['cv']:>12.4f}")
    done("")


if __name__ == "__main__":
    main()
