"""The reference's process: trusted, and never touched by the candidate. It builds the task's Model with its
own weights, and on the parent's request computes a trial's reference outputs (checksums and their bounds
for every trial, the whole outputs where the parent compares them), which adversarial input variants the
reference stays finite and well-conditioned on, the float64 diagnosis of a failing seed, and the eager and
torch.compile timings. The candidate's process draws the same inputs from the same seeds
(job_common.make_inputs); nothing it does can reach this process.
"""

from __future__ import annotations

import copy
import resource
import traceback
from pathlib import Path
from typing import Any

from hipforge.execution import checksum, op_trace, tensorfile
from hipforge.execution.antihack_dynamic import same_storage
from hipforge.execution.config import EvalConfig
from hipforge.execution.device_memory import capacity_mb, footprint_mb
from hipforge.execution.job_common import (
    build_reference,
    flatten,
    free_cached,
    load_task,
    make_inputs,
    peak_mb,
    rep_seeds,
    setup_device,
    sync,
)
from hipforge.execution.measure import cpu_time_warm, time_callable
from hipforge.execution.write_floor import written_bytes

preload = op_trace.warm  # paid once in the sandbox server, not per job


def run(job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
    try:
        # nothing on the device until the parent admits this evaluation beside the others in flight
        tasks = [load_task(src, f"hipforge_task_{i}") for i, src in enumerate(job["task_sources"])]
        cfg = EvalConfig.from_dict(job["config"])
        channel.emit({"event": "footprint", "mb": footprint_mb(tasks[0], cfg.init_seed),
                      "capacity_mb": capacity_mb("cpu" if cfg.backend == "cpu" else "cuda")})
        admitted = channel.recv() or {}
        if admitted.get("op") == "admit":  # else the parent gave up on this evaluation
            Reference(job, channel, tasks, float(admitted.get("device_memory_mb", 0))).serve()
    except Exception as e:  # noqa: BLE001  # the task's own code failed: no verdict about the candidate
        channel.emit({"event": "failed", "message": f"the reference failed: {type(e).__name__}: {e}"[:1000],
                      "traceback": traceback.format_exc()[-3000:]})


class Reference:
    def __init__(self, job: dict[str, Any], channel: Any, tasks: list[Any], memory_cap_mb: float) -> None:
        import torch

        self.cfg, self.job, self.channel = EvalConfig.from_dict(job["config"]), job, channel
        self.device = "cpu" if self.cfg.backend == "cpu" else "cuda"
        setup_device(self.device, memory_cap_mb)
        self.out = Path(job["outdir"])
        self.tasks = tasks
        self.models: list[Any] = []
        self.aliases = False
        self.bytes_per_rep = 0  # one forward's inputs and outputs at the task's size: what a timed trial holds per R
        self.written = 0  # the bytes its outputs occupy: what any forward of the task must write
        self.meta: list[list[dict[str, Any]] | None] = []
        for size in range(len(self.tasks)):
            try:
                self.models.append(build_reference(self.tasks[size], self.device, self.cfg.init_seed)[0])
                args = self.inputs(size, self.cfg.seeds[0], None)
                with torch.no_grad():
                    outs = flatten(self.models[size](*args))
                self.meta.append([tensorfile.meta(o) for o in outs])
                if size == 0:  # a reference whose output is a view of its input lets the candidate's be one too
                    self.aliases = any(same_storage(o, a) for o in outs for a in args if hasattr(a, "untyped_storage"))
                    tensors = [t for t in [*args, *outs] if hasattr(t, "numel")]
                    self.bytes_per_rep = sum(t.numel() * t.element_size() for t in tensors)
                    self.written = written_bytes(outs)
            except Exception:  # the task itself must run; its second size may not, and is then left out
                if size == 0:
                    raise
                self.meta.append(None)
        self.exact: dict[int, Any] = {}
        # off the device until the trials: evaluations in flight each hold a reference while they build
        self.models = [m.to("cpu") for m in self.models]
        self.on_device = self.device == "cpu"
        if not self.on_device:
            torch.cuda.empty_cache()
        self.rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.compiled, self.compile_error = None, ""

    def serve(self) -> None:
        import torch

        device = "" if self.device == "cpu" else torch.cuda.get_device_name()  # the judge's write floor
        self.channel.emit({"event": "ready", "meta": self.meta, "rss_mb": self.rss_mb, "aliases": self.aliases,
                           "bytes_per_rep": self.bytes_per_rep, "device": device, "written": self.written})
        if self.job.get("compile"):  # before the timing lock: torch.compile takes 15-60 s on a GPU
            self.compile_reference()
        while (msg := self.channel.recv()) is not None and msg.get("op") != "quit":
            self.channel.emit(getattr(self, f"op_{msg['op']}")(msg))

    def model(self, size: int) -> Any:
        if not self.on_device:
            self.models = [m.to(self.device) for m in self.models]
            self.on_device = True
        return self.models[size]

    def inputs(self, size: int, seed: int, variant: str | None) -> list[Any]:
        return make_inputs(self.tasks[size], self.device, seed, variant)

    def tolerances(self, size: int) -> list[tuple[float, float]]:
        return [self.cfg.tolerance(m["dtype"]) for m in self.meta[size]]

    def op_outputs(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Per forward of the trial (its ``reps`` seeds), the checksums and bounds, and the files if full."""
        import torch

        size = msg["size"]
        tolerances = self.tolerances(size)
        reply: dict[str, Any] = {"event": "outputs", "sums": [], "bounds": [], "files": []}
        for rep, seed in enumerate(rep_seeds(msg["seed"], msg.get("reps", 1))):
            with torch.no_grad():
                outs = flatten(self.model(size)(*self.inputs(size, seed, msg.get("variant"))))
            reply["sums"].append(checksum.sums(outs, msg["key"]))
            reply["bounds"].append(checksum.bounds(outs, tolerances))
            if msg.get("full"):
                reply["files"].append(self.write(outs, f"ref{msg['id']}_{rep}", msg["key"], tolerances))
            del outs  # the next forward need not sit beside this one's outputs
        reply["peak_mb"] = peak_mb(self.device)
        return reply

    def op_ops(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The reference's compute operations on the seed's inputs at the task's size (op_trace)."""
        return {"event": "ops", "ops": dict(op_trace.trace(self.model(0), *self.inputs(0, msg["seed"], None)))}

    def write(self, outs: list[Any], stem: str, key: int, tolerances: list[tuple[float, float]]) -> list[str]:
        """Whole outputs, or a huge one's fine sums and their bounds."""
        files = []
        for j, out in enumerate(outs):
            files.append(str(self.out / f"{stem}_{j}.t"))
            if checksum.whole(out.numel(), self.cfg.whole_output_limit):
                tensorfile.write(Path(files[-1]), out)
                continue
            tensorfile.write(Path(files[-1]), checksum.fine([out], key + j)[0])
            files.append(str(self.out / f"{stem}_{j}.bound.t"))
            tensorfile.write(Path(files[-1]), checksum.fine_bounds([out], [tolerances[j]])[0])
        return files

    def op_variants(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The adversarial variants the reference stays finite and well-conditioned on, at this seed."""
        kept = [kind for kind in self.variant_kinds() if self.judges(kind, msg["seed"])]
        free_cached(self.device)  # the float64 twins' blocks: the candidate's process shares the device
        return {"event": "variants", "usable": kept}

    def judges(self, kind: str, seed: int) -> bool:
        """Whether the reference stays finite and well-conditioned on the variant; its twin outputs (float64:
        the largest tensors of the check phase) are freed before the next kind's."""
        from hipforge.execution.adversarial import usable

        try:
            return usable(*self.twin_outputs(0, seed, kind), *self.cfg.tolerance("float32"))
        except Exception:  # noqa: BLE001  # no float64 kernels for an op: no variant
            return False

    def variant_kinds(self) -> tuple[str, ...]:
        """Offset variants make every term of a sum one sign, where an honest kernel summing in its own order
        drifts by K·eps: not for tasks whose outputs each reduce many inputs (a long GEMM, a loss)."""
        from hipforge.execution.adversarial import KINDS

        args = [a for a in self.inputs(0, self.cfg.seeds[0], None) if hasattr(a, "numel")]
        outputs = sum(tensorfile.numel(m["shape"]) for m in self.meta[0] or [])
        if sum(a.numel() for a in args) > 64 * max(outputs, 1):
            return tuple(k for k in KINDS if k not in ("low_mantissa", "large_offset"))
        return KINDS

    def op_gap(self, msg: dict[str, Any]) -> dict[str, Any]:
        """How far the float32 reference lies from float64 on a failing trial, in tolerances."""
        gap = self.gap(msg["size"], msg["seed"], msg.get("variant"))
        free_cached(self.device)
        return {"event": "gap", "gap": gap}

    def gap(self, size: int, seed: int, variant: str | None) -> float | None:
        import torch

        from hipforge.execution.numerics import fp64_gap

        try:
            approx, exact = self.twin_outputs(size, seed, variant)
            pairs = [(a, b) for a, b in zip(approx, exact, strict=True) if a.dtype == torch.float32]
            return fp64_gap(pairs, *self.cfg.tolerance("float32")) if pairs else None
        except Exception:  # noqa: BLE001
            return None

    def twin_outputs(self, size: int, seed: int, variant: str | None) -> tuple[list[Any], list[Any]]:
        import torch

        from hipforge.execution.numerics import widened

        if size not in self.exact:
            self.exact[size] = copy.deepcopy(self.model(size)).double()
        with torch.no_grad():  # float64 first: its forward's temporaries, the larger, beside no other outputs
            exact = flatten(self.exact[size](*widened(self.inputs(size, seed, variant))))
            approx = flatten(self.model(size)(*self.inputs(size, seed, variant)))
        return approx, exact

    def compile_reference(self) -> None:
        import torch

        try:
            compiled = torch.compile(self.model(0))
            with torch.no_grad():
                compiled(*self.inputs(0, self.cfg.seeds[0], None))
            self.compiled = compiled
        except Exception as e:  # noqa: BLE001
            self.compile_error = f"{type(e).__name__}: {str(e)[:300]}"

    def op_time(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Eager and torch.compile timings, each trial on fresh inputs (the seeds the parent drew)."""
        seeds = iter(msg["seeds"])
        reply: dict[str, Any] = {"event": "timed", "ref_eager": self.timed(self.model(0), seeds)}
        if self.compiled is not None:
            reply["ref_compiled"] = self.timed(self.compiled, iter(msg["seeds"]))
        elif self.compile_error:
            reply["compile_error"] = self.compile_error
        return reply

    def timed(self, model: Any, seeds: Any) -> dict[str, Any]:
        def next_inputs() -> list[Any]:  # drawn outside the timed call, one set per trial
            args = self.inputs(0, next(seeds), None)
            sync(self.device)
            return args

        return time_callable(lambda args: model(*args), self.cfg, self.device, next_inputs)

    def op_time_one(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The reference's trial of one round of the cpu backend's paired timing (pairing.py): eager, then
        torch.compile if compiled, each on the seed's fresh inputs, drawn outside its time, and timed right
        after an untimed call on them (measure.cpu_time_warm)."""
        reply: dict[str, Any] = {"event": "timed_one", "eager": self.once(self.model(0), msg["seed"])}
        if self.compiled is not None:
            reply["compiled"] = self.once(self.compiled, msg["seed"])
        elif self.compile_error:
            reply["compile_error"] = self.compile_error
        return reply

    def once(self, model: Any, seed: int) -> float:
        args = self.inputs(0, seed, None)
        return cpu_time_warm(lambda: model(*args))
