"""Build the verified SFT corpus (hipforge.train.corpus): synthetic tasks, offline kernels verified by the
executor, multi-turn fixes, train / validation / held-out splits with whole operator combinations held out
and KernelBench kept out of training. No Dagster or DuckDB.

Output (see hipforge/train/corpus.py): train|validation|heldout .jsonl and .parquet (one Record per row),
manifest.json (counts per stage, split sizes, data snapshot ids, seconds per stage).
Usage:
    python scripts/build_corpus.py --preset corpus --backend cpu --limit 60 --out out/corpus   # a small machine
    python scripts/build_corpus.py --preset corpus --backend cuda --arch sm_90 --out $OUT/corpus  # 16-core GPU box
KernelBench (what training must not contain) comes from --kernelbench or HIPFORGE_KERNELBENCH: level folders,
a .jsonl file or a dataset id, read by hipforge's own loader.

Throughput (measured on a shared 2-core machine at a load of about 10): the full preset synthesizes 4,448 tasks
(2,500 composition, 598 mutation, 1,350 constraint: the mutation and constraint generators run out of distinct
tasks at the 0.9 near-duplicate threshold) from 7,924 drafts in 45 minutes on 2 workers, splits them in 6
minutes and translates 4,442 in 5 minutes; reference checks scale with --workers (about 0.13 s of one core per
check when the machine is idle). Verification is the bottleneck: --slots evaluations in flight per device, one
timed at a time per device; fewer --children and --timed-trials shorten it. Compile errors are caught by the
gfx950 gate in a fraction of a second, so the corrupted attempts cost far less than the kernels themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.bench.kernelbench import load_kernelbench  # noqa: E402
from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.pool import make_pool  # noqa: E402
from hipforge.tasks.synth import PRESETS  # noqa: E402
from hipforge.train.corpus import attempted_in, build_corpus  # noqa: E402
from hipforge.train.corpus_tasks import CorpusConfig, load_tasks, save_tasks, shard_of, synthesize_tasks  # noqa: E402
from hipforge.train.splits import KernelBenchGuard, SplitPolicy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="corpus", choices=sorted(PRESETS))
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "rocm"])
    parser.add_argument("--arch", default="", help="cuda: sm_90-style; rocm: gfx950 (default) or gfx942")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="about this many tasks, modes in the preset's shares")
    parser.add_argument("--kernelbench", default=os.environ.get("HIPFORGE_KERNELBENCH", ""))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel reference checks")
    parser.add_argument("--slots", type=int, default=0, help="evaluations in flight per device (0: cores / devices)")
    parser.add_argument("--children", type=int, default=2, help="evolved variants per translation")
    parser.add_argument("--corruptions", type=int, default=2, help="corrupted attempts per verified task (0-2)")
    parser.add_argument("--system", default="full", choices=["full", "brief"])
    parser.add_argument("--heldout-share", type=float, default=SplitPolicy.heldout_share)
    parser.add_argument("--validation-share", type=float, default=SplitPolicy.validation_share)
    parser.add_argument("--timed-trials", type=int, default=0, help="0: the backend's protocol")
    parser.add_argument("--verify-seconds", type=float, default=0,
                        help="> 0: a box for verification; what is not verified in it makes no record")
    parser.add_argument("--tasks", type=Path, help="the synthesized tasks: read when the file exists (synthesis "
                        "skipped), written after synthesis otherwise")
    parser.add_argument("--synthesize-only", action="store_true", help="stop once --tasks is written")
    parser.add_argument("--evaluation-tasks", type=int, default=0, help="> 0: verify at most this many "
                        "validation and this many held-out tasks (spread over each), so that a verification box "
                        "spends itself on training tasks")
    parser.add_argument("--exclude", type=Path, nargs="*", default=[], help="corpora built earlier from the same "
                        "--tasks file: the tasks they judged are not verified again")
    parser.add_argument("--shard", default="0/1", help="I/N: verify every N-th task from the I-th (machines "
                        "verifying one tasks file between them; train_flow_gpu.py reads the shards together)")
    args = parser.parse_args()
    if args.synthesize_only and not args.tasks:
        parser.error("--synthesize-only writes the tasks file: pass --tasks")
    try:
        shard, shards = (int(n) for n in args.shard.split("/"))
    except ValueError:
        parser.error(f"--shard {args.shard!r} is not I/N")
    if not 0 <= shard < shards:
        parser.error(f"--shard {args.shard!r}: I must be in 0..N-1")
    if (shards > 1 or args.exclude) and not args.tasks:
        parser.error("--shard and --exclude pick from a tasks file: pass --tasks")
    if not args.kernelbench:
        parser.error("KernelBench is what training must exclude: pass --kernelbench or set HIPFORGE_KERNELBENCH")
    started = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:7.1f} s] {message}", flush=True)

    problems = load_kernelbench(args.kernelbench)
    guard = KernelBenchGuard((p.task_name, p.source) for p in problems)
    log(f"{len(guard)} KernelBench problems guard the training splits")
    arch = args.arch or ("sm_90" if args.backend == "cuda" else "gfx950")
    # records use the speedup over eager only: no torch.compile reference to build and time per task
    eval_config = EvalConfig(backend=args.backend, arch=arch, timed_trials=args.timed_trials or None,
                             time_compiled_ref=False)
    config = CorpusConfig(args.preset, args.limit, args.seed, args.backend, args.workers, args.children,
                          args.corruptions, system=args.system,
                          policy=SplitPolicy(args.heldout_share, args.validation_share),
                          verify_seconds=args.verify_seconds)
    synthesized = None
    if args.tasks and args.tasks.exists():
        synthesized = load_tasks(args.tasks)
        log(f"{len(synthesized[0])} tasks read from {args.tasks.name}: synthesis skipped")
    elif args.tasks:
        synthesized = synthesize_tasks(config, guard, log)
        save_tasks(args.tasks, *synthesized)
        log(f"{len(synthesized[0])} tasks written to {args.tasks}")
    if args.synthesize_only:
        return
    if synthesized and args.exclude:
        done = set().union(*(attempted_in(d) for d in args.exclude))
        tasks, stages = synthesized
        synthesized = [t for t in tasks if t.task_id not in done], stages
        log(f"{len(tasks) - len(synthesized[0])} tasks judged by {len(args.exclude)} earlier build(s) left out")
    if synthesized and (shards > 1 or args.evaluation_tasks > 0):
        tasks, stages = synthesized
        synthesized = shard_of(tasks, shard, shards, args.evaluation_tasks), stages
        log(f"shard {args.shard}: {len(synthesized[0])} of {len(tasks)} tasks")
    pool = make_pool("local", eval_config, args.slots or None)
    try:
        manifest = build_corpus(config, guard, pool, args.out, log, synthesized)
    finally:
        pool.close()
    manifest["eval_config"] = {"backend": args.backend, "arch": arch, "slots": args.slots or "default"}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    print(json.dumps({k: manifest[k] for k in ("counts", "seconds", "splits")}, indent=2, default=str))


if __name__ == "__main__":
    main()
