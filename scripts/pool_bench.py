"""The local evaluation pool and the Ray pool side by side on the same candidates (GPU machine).

For each pool, on one GPU and then on every visible GPU: evaluations per minute over a batch of
distinct candidates (cold builds), the share of time each GPU was busy (NVML utilization sampled
every 0.1 s), and the scaling efficiency (rate on n GPUs / (n x rate on one)). Each pool is warmed
first (its workers start their sandbox servers) so the timed batch measures steady throughput.
Ray is optional: without it the script says so and runs the local pool alone.
Usage: python scripts/pool_bench.py --backend cuda --arch sm_90 --candidates 32 --slots 8 --out pool.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.evaluate import evaluate  # noqa: E402
from hipforge.execution.pool.base import EvalPool, visible_gpus  # noqa: E402
from hipforge.execution.pool.local import LocalPool  # noqa: E402
from scripts.bench_executor import distinct_candidates  # noqa: E402


class GpuSampler:
    """NVML utilization of the given GPUs, sampled on a thread while the block runs."""

    def __init__(self, gpus: list[str], every_s: float = 0.1) -> None:
        import pynvml

        pynvml.nvmlInit()
        self._nvml, self.every_s = pynvml, every_s
        self.handles = {g: pynvml.nvmlDeviceGetHandleByIndex(int(g)) for g in gpus}
        self.samples: dict[str, list[int]] = {g: [] for g in gpus}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            for gpu, handle in self.handles.items():
                self.samples[gpu].append(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu)

    def __enter__(self) -> GpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def busy(self) -> dict[str, float]:
        return {g: round(statistics.fmean(s) / 100, 3) if s else 0.0 for g, s in self.samples.items()}


def ray_pool_factory(config: EvalConfig, slots: int) -> Callable[[list[str]], EvalPool] | str:
    """Makes Ray pools, or says why it cannot."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed here (pip install 'ray[default]', or put a Ray site dir on PYTHONPATH)"
    from hipforge.execution.pool.ray_pool import RayPool

    # Ray's workers must import hipforge (and Ray itself, if it lives on PYTHONPATH)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))

    def make(gpus: list[str]) -> EvalPool:
        return RayPool(config, slots=slots, num_gpus=len(gpus), object_store_memory=1 << 30,
                       runtime_env={"env_vars": {"PYTHONPATH": path}})
    return make


def measure(pool: EvalPool, gpus: list[str], count: int, warm: int) -> dict[str, object]:
    list(pool.evaluate_many(distinct_candidates(warm)))  # workers up, sandbox servers warm
    items = distinct_candidates(count)
    sampler = GpuSampler(gpus)
    started = time.monotonic()
    with sampler:
        verdicts = Counter(r.verdict.value for _, r in pool.evaluate_many(items))
    seconds = time.monotonic() - started
    busy = sampler.busy()
    return {"gpus": len(gpus), "seconds": round(seconds, 1), "per_minute": round(count / seconds * 60, 1),
            "per_minute_per_gpu": round(count / seconds * 60 / len(gpus), 1), "busy": busy,
            "busy_overall": round(statistics.fmean(busy.values()), 3), "verdicts": dict(verdicts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--candidates", type=int, default=32)
    parser.add_argument("--slots", type=int, default=8, help="evaluations in flight per GPU, both pools")
    parser.add_argument("--pools", default="local,ray")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = EvalConfig(backend=args.backend, arch=args.arch, time_compiled_ref=False,
                        cache_dir=tempfile.mkdtemp(prefix="hipforge-pool-bench-"))
    gpus = visible_gpus(args.backend)
    if not gpus:
        sys.exit(f"no GPU visible for backend {args.backend}")
    setup = evaluate(*distinct_candidates(1)[0], config)  # the shared runtime is built once, outside timing
    print(f"setup: {setup.seconds:.1f} s ({setup.verdict.value}); {len(gpus)} GPU(s), {os.cpu_count()} cores")

    makers: dict[str, Callable[[list[str]], EvalPool] | str] = {
        "local": lambda chosen: LocalPool(config, slots=args.slots, gpus=chosen),
        "ray": ray_pool_factory(config, args.slots)}
    report: dict[str, object] = {"gpus": gpus, "slots": args.slots, "candidates": args.candidates, "runs": []}
    for name in args.pools.split(","):
        make = makers[name]
        if isinstance(make, str):
            print(f"{name}: skipped: {make}")
            report[f"{name}_skipped"] = make
            continue
        for n in sorted({1, len(gpus)}):
            pool = make(gpus[:n])
            try:
                run = {"pool": name, **measure(pool, gpus[:n], args.candidates * n, warm=args.slots * n)}
            finally:
                pool.close()
            report["runs"].append(run)  # type: ignore[union-attr]
            print(f"{name:<6}{n:>2} GPU  {run['per_minute']:>7} eval/min  {run['per_minute_per_gpu']:>7} per GPU  "
                  f"busy {run['busy_overall']:.0%} {run['busy']}  {run['verdicts']}", flush=True)
    for name in ("local", "ray"):
        by_n = {r["gpus"]: r for r in report["runs"] if r["pool"] == name}  # type: ignore[union-attr]
        if len(by_n) == 2:
            one, many = by_n[1], by_n[len(gpus)]
            report[f"{name}_scaling_efficiency"] = eff = round(many["per_minute"] / (len(gpus) * one["per_minute"]), 3)
            print(f"{name}: scaling efficiency over {len(gpus)} GPUs: {eff:.0%}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
