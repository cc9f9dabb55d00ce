"""The offline translator (and optionally evolution) on KernelBench, through one backend, scored per level.

Kernels are written for the full-size problem; the cpu backend checks them on the smoke-scaled one.
Usage (GPU machine), one 10-minute call per line, as run for the README's tables and issue 23's
results/kernelbench_h200.json (each level's rows replace that level's in the file, the others are kept):
    python scripts/kernelbench_run.py --source KB.jsonl --levels 2 --backend cuda --arch sm_90 \
        --parallel 12 --compiled-levels 2 --evolve 3 --out $OUT/l2.json --results results/kernelbench_h200.json
    python scripts/kernelbench_run.py --source KB.jsonl --levels 1 --backend cuda --arch sm_90 \
        --parallel 12 --timed-trials 5 --compiled-levels 1 --out $OUT/l1.json --results results/kernelbench_h200.json
then `cp results/kernelbench_h200.json $OUT/` brings it back to commit. A level that does not finish in one call
goes on in the next: `--resume PREV.json` (the earlier call's --out) keeps its verdicts and runs only the rest.
A code-generation choice for every task (what evolution otherwise samples): --param conv_epilogue=fused.
On one H100, L1 with 20 timed trials and torch.compile evaluated 44 of 100 problems in 440 s.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.agents.evolver.offline import OfflineEvolver  # noqa: E402
from hipforge.agents.runner import Sink, StageRunner, StageTask  # noqa: E402
from hipforge.agents.translator.offline import OfflineTranslator  # noqa: E402
from hipforge.bench.bandwidth import bandwidth_shares  # noqa: E402
from hipforge.bench.kernelbench import load_kernelbench  # noqa: E402
from hipforge.bench.run_summary import result_row, resumed, score, write_results  # noqa: E402
from hipforge.bench.scoring import summary  # noqa: E402
from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.executor import LocalExecutor  # noqa: E402
from hipforge.execution.job_common import ALLOW_TF32  # noqa: E402
from hipforge.tasks import smoke_sources  # noqa: E402
from hipforge.translate.params import GenParams  # noqa: E402


def failure_detail(result) -> dict:  # noqa: ANN001
    """Why a kernel failed, kept whole enough to act on: the verdict's message, the first compiler
    error line and the end of the worker's output (where a crash's own message lands)."""
    if result.verdict.value == "correct":
        return {}
    log_lines = (result.compile_log or "").splitlines()
    first_error = next((line for line in log_lines if "error" in line.lower()), "")
    tail = [line for line in (result.output_tail or "").splitlines() if line.strip()][-8:]
    return {"phase": result.phase, "first_compile_error": first_error[:400], "output_tail": "\n".join(tail)[-1500:],
            "failing_seed": result.failing_seed, "max_abs_error": result.max_abs_error}


def score_table(stage: str, table: dict, by_name: dict, levels: list[int], over: str = "eager") -> list[dict]:
    """Print and return KernelBench's scores per level for one stage."""
    print(f"\n{'level':<6}{'stage':<12}{'tasks':>6}{'compiled':>10}{'correct':>9}{'fast_1':>8}{'fast_1.5':>9}"
          f"{'geomean':>9}", flush=True)
    rows = []
    for level in levels:
        scores = [score(n, table.get(n), over) for n in by_name if by_name[n].level == level]
        s = summary(scores)
        geo = f"{s['geomean']:.3f}" if s["geomean"] else "-"
        print(f"L{level:<5}{stage:<12}{len(scores):>6}{s['compiled']:>10.2f}{s['correct']:>9.2f}"
              f"{s['fast_1']:>8.2f}{s['fast_1.5']:>9.2f}{geo:>9}", flush=True)
        rows.append({"level": level, "stage": stage, "over": over, **s})
    return rows


def gen_params(pairs: list[str]) -> GenParams:
    """GenParams from NAME=VALUE pairs, each value read as its field's type; a bad one exits naming it."""
    fields = GenParams.__dataclass_fields__
    changes: dict = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in fields or not value:
            sys.exit(f"--param {pair!r}: expected NAME=VALUE with NAME one of {', '.join(fields)}")
        kind = type(getattr(GenParams(), name))
        try:
            changes[name] = value.lower() in ("1", "true", "yes") if kind is bool else kind(value)
        except ValueError:
            sys.exit(f"--param {pair!r}: {name} must be of type {kind.__name__}")
    try:
        return GenParams(**changes)
    except ValueError as e:
        sys.exit(f"--param: {e}")


def run_meta(args: argparse.Namespace) -> dict:
    """What the committed summary was measured with: the device, torch, the TF32 setting every reference and
    candidate process ran under (PyTorch's own default lets eager convolutions take TF32 through cuDNN), the
    protocol and the fp32 tolerance."""
    import torch

    cuda = args.backend == "cuda" and torch.cuda.is_available()
    atol, rtol = EvalConfig().tolerance("float32")
    return {"device": torch.cuda.get_device_name() if cuda else args.backend, "torch": torch.__version__,
            "backend": args.backend, "arch": args.arch, "evolve": args.evolve, "params": args.param,
            "timed_trials": args.timed_trials or "backend default", "tolerance_fp32": {"atol": atol, "rtol": rtol},
            "allow_tf32": {"cudnn": ALLOW_TF32, "matmul": ALLOW_TF32, "default_in_pytorch": {"cudnn": True,
                                                                                              "matmul": False}},
            "rates": "over all tasks of the level", "geomeans": "over the correct tasks"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--limit", type=int, default=0, help="first N problems of each level (0: all)")
    parser.add_argument("--exclude", default="", help="skip problems whose task name (kernelbench/L1/54_conv_...) "
                        "matches this regex (case-insensitive), e.g. 'L1/.*conv'")
    parser.add_argument("--only", default="", help="keep only problems whose task name matches this regex")
    parser.add_argument("--evolve", type=int, default=0, help="evaluations per task spent evolving correct kernels")
    parser.add_argument("--evolve-levels", default="2")
    parser.add_argument("--compiled-levels", default="", help="also time the reference under torch.compile on these "
                        "levels (15-60 s per task) and score speedups over it")
    parser.add_argument("--timed-trials", type=int, default=0, help="timed trials per measurement (0: the backend's "
                        "protocol, KernelBench's 100 on GPUs); fewer when only verdicts are wanted")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--results", type=Path,
                        help="also write the run's summary as committed under results/: rows {level, stage, n, "
                        "correct, fast_1, geomean_eager, geomean_compiled, faster_than_compiled}; rows of other "
                        "levels already in the file are kept, so one file can gather one run per level")
    parser.add_argument("--resume", type=Path, help="an earlier call's --out for the same levels and options: its "
                        "finished tasks keep their verdicts and only the others run")
    parser.add_argument("--rerun", default="", help="with --resume: run again the problems whose task name matches "
                        "this regex, whatever the earlier call said of them")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a code-generation choice of the translator (GenParams), e.g. conv_epilogue=fused")
    args = parser.parse_args()
    params = gen_params(args.param)  # a bad choice stops the run before any work
    timing = {"timed_trials": args.timed_trials, "warmup": 1} if args.timed_trials else {}
    compiled_levels = {int(x) for x in args.compiled_levels.split(",") if x}
    results: dict = {}  # task name -> its translation's verdict
    refused: dict[str, str] = {}  # task name -> why the translator declined it
    rows: list = []

    def write(evolved: dict, bandwidth: dict) -> None:
        """The JSON so far: a run cut short by its time limit keeps every finished stage."""
        if not args.out:
            return
        detail = {n: done[n] if n in done else {"declined": refused[n]} if n in refused else
                  {} if results.get(n) is None else  # not evaluated yet
                  {"verdict": results[n].verdict.value, "message": results[n].message[:1000],
                   **failure_detail(results[n]), "passes_loose": results[n].passes_loose,
                   "speedup": results[n].speedup_eager, "speedup_compiled": results[n].speedup_compiled,
                   "bandwidth": bandwidth.get(n), "seconds": results[n].seconds,
                   "rerun": results[n].integrity.get("rerun"), "stages_s": results[n].integrity.get("stages_s"),
                   "evolved_speedup": evolved[n].speedup_eager if evolved.get(n) else None,
                   "evolved_speedup_compiled": evolved[n].speedup_compiled if evolved.get(n) else None}
                  for n in by_name}
        args.out.write_text(json.dumps({"meta": meta, "summary": rows, "tasks": detail}, indent=1, default=str))

    class Kept(Sink):
        def evaluated(self, task, candidate, result, generation) -> None:  # noqa: ANN001
            if generation == 0 and task.name not in results:  # a translation, not an evolved child
                results[task.name] = result
                print(f"{len(results) - len(carried)}/{len(tasks)} {task.name}: {result.verdict.value} in "
                      f"{result.seconds:.0f} s", flush=True)  # a call cut off by its box still shows its progress
                write(results, {})  # a run cut short by its time limit keeps every verdict so far

        def declined(self, task, reason) -> None:  # noqa: ANN001
            refused[task.name] = reason

    runners = {flag: StageRunner(LocalExecutor(EvalConfig(backend=args.backend, arch=args.arch, time_compiled_ref=flag,
                                                          run_timeout_s=300, **timing), args.parallel), Kept())
               for flag in (False, True)}  # one per reference protocol
    problems = load_kernelbench(args.source, [int(x) for x in args.levels.split(",")], args.limit)
    if args.exclude:
        problems = [p for p in problems if not re.search(args.exclude, p.task_name, re.IGNORECASE)]
    if args.only:
        problems = [p for p in problems if re.search(args.only, p.task_name, re.IGNORECASE)]
    smoke = smoke_sources([(p.task_name, p.source) for p in problems], args.parallel) if args.backend == "cpu" else {}
    tasks = [StageTask(p.task_name, p.task_name, p.source, smoke.get(p.task_name, p.source), level=p.level)
             for p in problems]
    by_name = {t.name: t for t in tasks}
    done, carried, carried_evolved, earlier = resumed(args.resume, set(by_name), args.rerun) if args.resume \
        else ({}, {}, {}, {})
    meta = {**run_meta(args), **({"resumed": earlier} if earlier else {})}
    results.update(carried)
    refused.update({n: d["declined"] for n, d in done.items() if "declined" in d})
    tasks = [t for t in tasks if t.name not in done]
    started = time.monotonic()
    translated = {flag: runner.translate([t for t in tasks if (t.level in compiled_levels) == flag],
                                         OfflineTranslator(params=params))
                  for flag, runner in runners.items()}
    outcomes = {o.task.name: o for batch in translated.values() for o in batch}
    made = {n: o.candidate for n, o in outcomes.items() if o.candidate is not None}
    names = list(made)
    results.update({n: o.result for n, o in outcomes.items()})

    print(f"translated and evaluated {len(names)} of {len(tasks)} ({len(done)} done before) in "
          f"{time.monotonic() - started:.0f} s")
    levels = sorted({p.level for p in problems})
    rows.append(score_table("translated", results, by_name, levels))
    reasons = Counter(d[:70] for d in refused.values())
    failures = Counter(r.verdict.value for r in results.values() if r is not None and r.verdict.value != "correct")
    print(f"\ndeclined {len(refused)}: {dict(reasons.most_common(12))}\nfailed verdicts: {dict(failures)}")

    def bandwidth_of(table: dict, stage: str) -> dict:
        """Pure elementwise kernels against a device-to-device copy measured now (GPU backends only)."""
        if args.backend == "cpu":
            return {}
        elementwise = [(n, by_name[n].source, table[n].runtime.typical_ms(table[n].backend)) for n in names
                       if made[n].params.get("strategy") == "elementwise" and table[n] is not None
                       and table[n].verdict.value == "correct" and table[n].runtime]
        bandwidth = bandwidth_shares(elementwise)
        shares = sorted(b["share"] for b in bandwidth.values())
        if shares:
            print(f"\nelementwise bandwidth share of a D2D copy, {stage} ({len(shares)} kernels): median "
                  f"{shares[len(shares) // 2]:.2f}, min {shares[0]:.2f}, max {shares[-1]:.2f}, "
                  f">=0.7: {sum(x >= 0.7 for x in shares)}", flush=True)
        return bandwidth

    write(results, bandwidth_of(results, "translated"))
    evolved = {**results, **carried_evolved}
    evolve_levels = {int(x) for x in args.evolve_levels.split(",")}
    evolving = args.evolve > 0 and any(outcomes[n].correct and by_name[n].level in evolve_levels for n in names)
    if evolving:
        for flag, runner in runners.items():
            starts = {o.task.task_id: (o.candidate, o.result) for o in translated[flag]
                      if o.correct and o.task.level in evolve_levels}
            for best in runner.evolve([by_name[n] for n in starts], OfflineEvolver(budget=args.evolve), starts):
                evolved[best.task.name] = best.result  # the start is among the candidates: never worse
        print(f"evolved {sum(o.correct and o.task.level in evolve_levels for o in outcomes.values())} tasks "
              f"({args.evolve} evaluations each) by {time.monotonic() - started:.0f} s")
        rows.append(score_table("evolved", evolved, by_name, levels))
    stages = (("translated", results), ("evolved", evolved)) if evolving else (("translated", results),)
    for stage, table in stages if compiled_levels else ():
        print(f"\nover torch.compile ({stage}):")
        rows.append(score_table(stage, table, by_name, sorted(compiled_levels & set(levels)), over="compiled"))
    write(evolved, bandwidth_of(evolved, "best"))
    if args.results:
        summary_rows = [result_row(stage, table, by_name, level) for stage, table in stages for level in levels]
        final = stages[-1][1]  # the final kernels: each task's best of translation and evolution, if it evolved
        summary_rows += [result_row("best", final, by_name, level) for level in levels]
        write_results(args.results, meta, summary_rows, levels)


if __name__ == "__main__":
    main()
