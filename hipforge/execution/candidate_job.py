"""The candidate's process: untrusted. It builds ModelNew, runs forward on the inputs each trial names, and
ships what it returned; it judges nothing.

The parent drives it one message at a time (``prepare``, ``go``, ``commit``, ``ship``/``drop``) and times
``go`` → ``committed`` with its own clock. Everything this process reports is evidence the parent weighs:
outputs and checksums are checked against the reference's process, times against the parent's clock and
the calibration taken here before the candidate existed, threads counted from outside. What this process
observes about the candidate itself (its audit-hook violations, extension calls, a NaN-poisoned kernel
result that leaves the output right) can only incriminate it: a candidate that silences these checks
gains nothing the parent does not check on its own.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

from hipforge.execution import antihack_dynamic as dyn
from hipforge.execution import checksum, device_prep, op_trace, tensorfile
from hipforge.execution.candidate_process import CandidateProcess, Failed
from hipforge.execution.forward_outputs import kept_copy, noop_module, refilled, same_bits
from hipforge.execution.job_common import flatten, make_inputs, peak_mb, rep_seeds, sync


def preload() -> None:
    """Paid once in the sandbox server: the op trace's lazy imports, before any job snapshots torch."""
    op_trace.warm()


def run(job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
    try:
        Harness(job, mechanisms, channel).serve()
    except Failed as f:
        channel.emit({"event": "failed", "verdict": f.verdict, "message": f.message, **f.fields})
    except Exception as e:  # noqa: BLE001  # the task's own code or this harness failed
        channel.emit({"event": "failed", "verdict": "runtime_error", "message": f"{type(e).__name__}: {e}"[:1000],
                      "traceback": traceback.format_exc()[-3000:]})


class Harness(CandidateProcess):
    def __init__(self, job: dict[str, Any], mechanisms: list[str], channel: Any) -> None:
        super().__init__(job, mechanisms, channel)
        self.outputs: list[list[Any]] = []  # per forward of the trial, its flattened outputs as at its return
        self.live: list[Any] = []  # the last forward's outputs themselves: do they change after it returned?
        self.args: list[Any] = []
        self.pristine: list[Any] | None = None
        self.found: list[tuple[str, str]] = []
        self.noop: Any = None  # calibration's stand-in for ModelNew
        self.size, self.variant, self.inspecting, self.aliases_ok, self.refill = 0, None, False, False, False
        self.late = self.timed = False
        device_prep.warm_up(self.device)

    def serve(self) -> None:
        self.channel.emit({"event": "baseline", "isolation": self.mechanisms})
        while (msg := self.channel.recv()) is not None:
            op = msg.get("op")
            if op == "quit":
                return
            self.channel.emit(getattr(self, f"op_{op}")(msg))

    # -- trials --------------------------------------------------------------------------------
    def op_prepare(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        self.outputs, self.args = [], []
        if msg.get("noop"):  # calibration: the same protocol around a forward that does nothing
            self.noop = noop_module([torch.zeros(m["shape"], dtype=getattr(torch, m["dtype"]), device=self.device)
                                     for m in msg["meta"]], fresh=self.device == "cpu")
        elif msg["size"] not in self.models:  # the second size's ModelNew, built before its first trial
            try:
                with self.guard.armed():
                    self.model(msg["size"])
            except BaseException as e:
                raise self.failure(e, "building ModelNew at the second size") from None
        self.size, self.variant, self.inspecting = msg["size"], msg.get("variant"), bool(msg.get("inspect"))
        self.aliases_ok, self.refill = bool(msg.get("aliases_ok")), bool(msg.get("refill"))
        self.late = bool(msg.get("late"))
        self.exts.poison = bool(msg.get("poison"))
        self.timed = bool(msg.get("timed") or msg.get("noop"))  # guarded by the sample (trials.py), not these
        if not self.timed:
            device_prep.fill_free_blocks_with_nan(self.device)
        sync(self.device)  # the fill's kernels (GBs where the cache is large) finish before go's clock starts
        return {"event": "prepared"}

    def draw_inputs(self, seed: int, into_last: bool = False) -> None:
        """The trial's inputs, from a seed that arrives with go: nothing the candidate does before go (in
        prepare, or in a thread meanwhile) can compute on them, and their making is inside the parent's clock
        (the calibration makes them too). ``into_last``: written into the last forward's tensors instead (the
        refill probe: identity, address and version counter unchanged), so that an output tied to the tensor
        rather than computed from its values is wrong. A late trial's inputs are written on the current stream
        behind a hold (device_prep.hold_stream), after the flush: forward is called before they exist, so work
        it does not order after that stream reads what was there before."""
        if self.late:
            self.clock.flush()
            device_prep.hold_stream(self.device)
        with self.guard.armed(False):
            values = make_inputs(self.tasks[self.size], self.device, seed, self.variant)
            self.args = refilled(self.args, values) if into_last else values
        self.pristine = [a.clone() if hasattr(a, "clone") else a for a in self.args] if self.inspecting else None
        if not self.late:
            self.clock.flush()

    def op_go(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The trial's forwards (``reps`` of them, one unless the parent asks for more), each on its own
        fresh inputs drawn just before it (a refill trial's later forwards: the first one's tensors, refilled);
        ``ms`` is the sum of their times (``cpu_ms`` of their CPU times, on the cpu backend). Calibration takes
        the same path with the no-op forward: every step besides the forward itself is the protocol's cost."""
        import torch

        model = self.forward_model(msg.get("size", 0))
        seeds = rep_seeds(msg["seed"], int(msg.get("reps", 1)))
        ms = cpu_ms = 0.0
        for rep, seed in enumerate(seeds):
            self.live = []  # copied at its return already: the next forward need not sit beside it
            self.draw_inputs(seed, into_last=self.refill and rep > 0)
            try:
                with self.guard.armed(), torch.no_grad():
                    start = self.clock.mark()
                    out = model(*self.args)
                    end = self.clock.mark()
            except BaseException as e:
                raise self.failure(e, f"forward on seed {seed}", failing_seed=msg.get("seed")) from None
            self.live = flatten(out)
            del out
            # what forward returned, copied the moment it returned and before the device is synchronized: work
            # left running (a thread, a stream it did not synchronize) is not in it, and the next forward may
            # write into this one's buffer (honest reuse). The copy is outside the forward's own time.
            self.outputs.append([kept_copy(o) for o in self.live])
            ms += self.clock.elapsed(start, end)
            cpu_ms += self.clock.cpu_ms(start, end)
            self.inspect(self.live)
        self.noop = None
        return {"event": "returned", "ms": ms, "cpu_ms": cpu_ms}

    def forward_model(self, size: int) -> Any:
        """The trial's forward: ModelNew at the size, or calibration's no-op once prepared."""
        return self.noop if self.noop is not None else self.models.get(size)

    def op_warm(self, msg: dict[str, Any]) -> dict[str, Any]:
        """cpu: one untimed forward just before a timed or no-op trial, outside the parent's readings of the
        trial (pairing.warm_up), so the trial's forward runs warm as the reference's does (measure.cpu_time_warm)
        instead of first after its process was stopped through the reference's trial. Its inputs are the
        parent's throwaway seed's, never the trial's (unknown until go), and its outputs are dropped unchecked:
        nothing it computes can serve the timed forward."""
        import torch

        model = self.forward_model(msg["size"])
        with self.guard.armed(False):
            args = make_inputs(self.tasks[msg["size"]], self.device, msg["seed"], None)
        try:
            with self.guard.armed(), torch.no_grad():
                model(*args)
        except BaseException as e:
            raise self.failure(e, f"warm-up forward on seed {msg['seed']}") from None
        return {"event": "warmed"}

    def op_commit(self, msg: dict[str, Any]) -> dict[str, Any]:
        if any(not hasattr(o, "detach") for outputs in self.outputs for o in outputs):
            kinds = sorted({type(o).__name__ for outputs in self.outputs for o in outputs})
            raise Failed("runtime_error", f"forward returned {', '.join(kinds)}, not tensors")
        self.key = msg["key"]
        self.changed_after_return()
        return {"event": "committed", "sums": [checksum.sums(outputs, msg["key"]) for outputs in self.outputs],
                "meta": [[tensorfile.meta(o) for o in outputs] for outputs in self.outputs]}

    def op_ship(self, msg: dict[str, Any]) -> dict[str, Any]:
        files: list[list[str]] = []
        for rep, outputs in enumerate(self.outputs):
            files.append([])
            for j, out in enumerate(outputs):  # a huge output travels as its fine sums
                files[-1].append(str(self.out / f"trial{msg['id']}_{rep}_{j}.t"))
                whole = checksum.whole(out.numel(), self.cfg.whole_output_limit)
                tensorfile.write(Path(files[-1][-1]), out if whole else checksum.fine([out], self.key + j)[0])
        self.release()
        return {"event": "shipped", "files": files}

    def op_drop(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.release(look_again=not self.timed)
        return {"event": "dropped"}

    def op_report(self, msg: dict[str, Any]) -> dict[str, Any]:
        """What this process saw the candidate do: it can only count against the candidate. With a trace seed,
        first one more forward on that seed's inputs, whose ATen operations are counted (op_trace)."""
        ops = self.trace_ops(msg["trace_seed"]) if "trace_seed" in msg else {}
        if self.exts.calls == 0:
            why = "never calls its HIP extension" if self.exts.modules else "builds no HIP extension"
            self.found.append(("code_bypass", f"ModelNew {why}: PyTorch computes the result"))
        patched = dyn.patched(self.before)
        return {"event": "report", "hacks": [*self.guard.violations, *([patched] if patched else []), *self.found],
                "ops": ops, "peak_mb": peak_mb(self.device)}

    def trace_ops(self, seed: int) -> dict[str, int]:
        """A forward that fails here (or hides its ATen calls) only leaves the trace empty: no evidence."""
        try:
            with self.guard.armed(False):
                args = make_inputs(self.tasks[0], self.device, seed, None)
            with self.guard.armed():
                return dict(op_trace.trace(self.models[0], *args))
        except BaseException:  # noqa: BLE001  # the trials have judged the forward already
            return {}

    # -- helpers ---------------------------------------------------------------------------------
    def inspect(self, outputs: list[Any]) -> None:
        """The honest-behaviour checks of one forward: plain tensors, inputs left alone. (An output buffer
        reused across calls is fine: every trial's inputs are fresh and its outputs are checked.)"""
        if lazy := dyn.lazy_output(outputs):
            self.found.append(("lazy_evaluation", lazy))
        if self.pristine is not None and any(
                hasattr(a, "untyped_storage") and (a.shape != p.shape or not dyn.identical(a, p))
                for a, p in zip(self.args, self.pristine, strict=True)):
            self.found.append(("input_mutation", "forward changed its input tensors"))
        if self.pristine is not None and not self.aliases_ok and any(
                dyn.same_storage(o, a) for o in outputs if hasattr(o, "untyped_storage")
                for a in self.args if hasattr(a, "untyped_storage")):
            self.found.append(("output_aliasing", "the output shares storage with an input"))

    def changed_after_return(self) -> None:
        """The last forward's outputs against their copy at return: at commit (the parent has counted threads
        meanwhile) and, in a checked trial, again at ship or drop. Work left running after return shows here once
        it has written."""
        sync(self.device)
        if self.outputs and any(
                hasattr(live, "untyped_storage") and not same_bits(live, kept)
                for live, kept in zip(self.live, self.outputs[-1], strict=False)):
            self.found.append(("deferred_work", "an output changed after forward had returned: work left running "
                                                "(a thread, or a stream the forward did not synchronize) wrote it"))
            self.live = []

    def release(self, look_again: bool = True) -> None:
        if look_again:
            self.changed_after_return()
        self.outputs, self.args, self.pristine, self.live = [], [], None, []
        self.exts.poison = False
