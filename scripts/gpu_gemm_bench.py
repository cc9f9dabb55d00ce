"""fp32 GEMM on one GPU: the offline translator's kernels against cuBLAS on KernelBench's level-1 GEMM problems.

For every problem (and every tile shape with --variants) the translator's full-size candidate is compiled
by the cuda backend (HIP through the shim, nvcc; the path the evaluator takes) in parallel processes,
while one child process (scripts/gpu_gemm_measure.py) measures problem after problem as their builds
land in the shared build cache: allclose against the reference at atol = rtol = 1e-4 on two seeds, then
CUDA-event times of ours and of the reference's forward (torch.matmul / bmm / einsum through cuBLAS, plus
the triu / tril of 14 and 15) with TF32 off, the L2 flushed by writing 256 MB before each trial, a few
warm-ups, the median of the trials. A crash takes down one candidate: the child is started again after it.
Needs torch and nvcc (no Dagster, DuckDB or pydantic). Prints a table and writes the rows as JSON.
--variants measures every tile of gemm_tiles.TILES (block-tiled and warp-tiled, ...wWMxWN); --tiles a few;
--engines simt,mma also the tensor-core kernel (GenParams.gemm_engine, gemm_mma.py) beside each problem's auto tile.
    python scripts/gpu_gemm_bench.py --source KB.jsonl --out $OUT/gemm_bench.json [--variants | --tiles T1,T2]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.translate import GenParams, generate  # noqa: E402
from hipforge.translate.kernels.gemm_tiles import TILES  # noqa: E402

PROBLEMS = (1, 2, 3, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18)  # KernelBench L1's GEMM-like problems
SPLIT_VARIANTS = {6: (128, 256)}  # long K: more slices than the run-time rule picks
MEASURE = Path(__file__).resolve().parent / "gpu_gemm_measure.py"


def load_problems(source: Path, ids: list[int]) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    found = {r["problem_id"]: r for r in rows if r["level"] == 1 and r["problem_id"] in ids}
    missing = sorted(set(ids) - set(found))
    if missing:
        print(f"not in {source.name}: L1 problems {missing}")
    return [{"id": i, "name": found[i]["name"], "code": found[i]["code"]} for i in ids if i in found]


def variants(problem_id: int, all_tiles: bool, tiles: tuple[str, ...] = TILES) -> list[tuple[str, int]]:
    if not all_tiles:
        return [("auto", 0)]
    return [("auto", 0), *((t, 0) for t in tiles), *(("auto", s) for s in SPLIT_VARIANTS.get(problem_id, ()))]


def build(code: str, tile: str, split_k: int, engine: str, arch: str) -> dict[str, Any]:
    """Translate and compile one candidate (a worker process); the build lands in the shared cache."""
    from hipforge.execution.cuda import CudaBackend
    from hipforge.execution.gate import hip_sources

    start = time.perf_counter()
    try:
        gen = generate(code, GenParams(gemm_tile=tile, split_k=split_k, gemm_engine=engine))
        if gen.strategy != "gemm":
            return {"ok": False, "error": f"strategy {gen.strategy}, not the GEMM", "source": gen.source}
        CudaBackend(arch=arch).load_inline("gemm_bench", hip_sources(gen.source), functions=list(gen.kernels))
        return {"ok": True, "source": gen.source, "choices": gen.choices, "build_s": time.perf_counter() - start}
    except Exception as exc:  # noqa: BLE001 - reported in the table; the other builds go on
        log = getattr(exc, "log", "")
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}\n{log[-1500:]}"[:2500]}


def run_children(problems: list[dict[str, Any]], args: argparse.Namespace, deadline: float) -> list[dict[str, Any]]:
    """Measure in a child process; after a crash, again from the candidate after the one that crashed it."""
    rows: list[dict[str, Any]] = []
    pending = [dict(p) for p in problems if p["candidates"]]
    names = {p["id"]: p["name"] for p in problems}
    with tempfile.TemporaryDirectory(prefix="gemm-bench-") as tmp:
        for attempt in range(len([c for p in pending for c in p["candidates"]]) + 1):
            if not pending:
                break
            job, result = Path(tmp) / f"job{attempt}.json", Path(tmp) / f"result{attempt}.jsonl"
            job.write_text(json.dumps({"problems": pending, "arch": args.arch, "warmup": args.warmup,
                                       "trials": args.trials}))
            result.touch()
            try:
                proc = subprocess.run([sys.executable, str(MEASURE), str(job), str(result)], capture_output=True,
                                      text=True, timeout=max(10.0, deadline - time.monotonic()))
                tail = (proc.stdout + proc.stderr)[-1500:]
                why = f"child exited {proc.returncode}: {tail}"
            except subprocess.TimeoutExpired:
                why = f"time budget (--budget {args.budget} s) spent"
            events = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
            done = {(e["problem"], e["label"]) for e in events if e["event"] == "row"}
            rows += [e for e in events if e["event"] == "row"]
            started = [e for e in events if e["event"] == "start" and (e["problem"], e["label"]) not in done]
            for e in started:  # the candidate it was measuring when it died
                rows.append({"problem": e["problem"], "name": names[e["problem"]], "label": e["label"],
                             "status": "failed", "error": why})
                done.add((e["problem"], e["label"]))
            pending = [{**p, "candidates": [c for c in p["candidates"] if (p["id"], c["label"]) not in done]}
                       for p in pending]
            pending = [p for p in pending if p["candidates"]]
            if not events or time.monotonic() > deadline:  # no progress (no GPU, a broken reference setup...)
                rows += [{"problem": p["id"], "name": p["name"], "label": c["label"], "status": "failed", "error": why}
                         for p in pending for c in p["candidates"]]
                break
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'problem':<40} {'shape':<44} {'variant':<26} {'ours ms':>9} {'cuBLAS ms':>9} {'cuBLAS/ours':>11} "
            f"{'ours TF/s':>9} {'cuBLAS TF/s':>11}")
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r["problem"], r.get("ours_ms", float("inf")))):
        name = f"{r['problem']}_{r.get('name', '')}"[:40]
        if r["status"] != "ok":
            lines.append(f"{name:<40} {r.get('shape', '')[:44]:<44} {r['label']:<26} FAILED {r['error'][:300]!r}")
            continue
        lines.append(f"{name:<40} {r['shape'][:44]:<44} {r['label']:<26} {r['ours_ms']:>9.3f} {r['torch_ms']:>9.3f} "
                     f"{r['ratio']:>11.3f} {r['ours_tflops']:>9.1f} {r['torch_tflops']:>11.1f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="KernelBench .jsonl (fields level, problem_id, ...)")
    parser.add_argument("--out", type=Path, required=True, help="write the rows here as JSON")
    parser.add_argument("--problems", default=",".join(map(str, PROBLEMS)))
    parser.add_argument("--variants", action="store_true", help="every tile of gemm_tiles.TILES, and split-K counts")
    parser.add_argument("--tiles", default="", help="comma-separated tiles (gemm_tiles.parse spellings) in place of "
                        "TILES; implies --variants")
    parser.add_argument("--engines", default="simt", help="comma-separated GenParams.gemm_engine values; engines other "
                        "than simt are measured at the auto tile and split-K variants only")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2), help="parallel builds")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--budget", type=float, default=330.0, help="seconds for the whole run")
    args = parser.parse_args()
    tiles = tuple(t for t in args.tiles.split(",") if t) or TILES
    engines = tuple(e for e in args.engines.split(",") if e)
    for t in tiles:
        GenParams(gemm_tile=t)  # a misspelt tile fails here, not in every build
    for e in engines:
        GenParams(gemm_engine=e)
    args.variants = args.variants or bool(args.tiles)
    start = time.monotonic()
    problems = load_problems(args.source, [int(x) for x in args.problems.split(",")])
    spawn = multiprocessing.get_context("spawn")  # the workers import torch afresh, no CUDA state forked
    rows: list[dict[str, Any]] = []
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=spawn) as pool:
        futures = {(p["id"], t, s, e): pool.submit(build, p["code"], t, s, e, args.arch)
                   for p in problems for e in engines
                   for t, s in variants(p["id"], args.variants and e == "simt", tiles)}
        for p in problems:
            p["candidates"], seen = [], {}
            for (pid, tile, split_k, engine), future in futures.items():
                if pid != p["id"]:
                    continue
                built = future.result()
                split = (f" split {split_k}" if split_k else "") + ("" if engine == "simt" else f" {engine}")
                label = f"{tile}{split}"
                if built["ok"] and tile == "auto":
                    label = f"auto={built['choices']['gemm_tile']}{split}" if engine == "simt" else f"{engine}{split}"
                if not built["ok"]:
                    rows.append({"problem": p["id"], "name": p["name"], "label": label, "gemm_tile": tile,
                                 "split_k": split_k, "status": "failed", "error": "build: " + built["error"]})
                elif built["source"] in seen:  # the same kernel as another variant: measured once
                    seen[built["source"]]["label"] += f" (= {label})"
                else:
                    seen[built["source"]] = {"index": len(p["candidates"]), "label": label, "gemm_tile": tile,
                                             "split_k": split_k, "source": built["source"]}
                    p["candidates"].append(seen[built["source"]])
        print(f"built {len(futures)} candidates in {time.monotonic() - start:.0f} s", flush=True)
    rows += run_children(problems, args, start + args.budget)
    import torch

    meta = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
            "torch": torch.__version__, "allow_tf32": False, "trials": args.trials, "warmup": args.warmup,
            "l2_flush_bytes": 256 << 20, "tolerance": {"atol": 1e-4, "rtol": 1e-4}, "seeds": 2,
            "cuBLAS": "the reference Model's forward (torch.matmul / bmm / einsum; + triu / tril for 14, 15)",
            "seconds": round(time.monotonic() - start, 1)}
    best = {}
    for r in rows:
        if r["status"] == "ok" and r["ours_ms"] < best.get(r["problem"], {}).get("ours_ms", float("inf")):
            best[r["problem"]] = r
    print(f"{meta['device']}, torch {meta['torch']}, TF32 off (torch.backends.cuda.matmul.allow_tf32 = False), "
          f"median of {args.trials} trials after {args.warmup} warm-ups, L2 flushed (256 MB) before each")
    print(table(rows))
    if args.variants:
        print("\nbest variant per problem:\n" + table(list(best.values())))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "rows": rows, "best": list(best.values())}, indent=1) + "\n")
    print(f"wrote {args.out} ({meta['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
