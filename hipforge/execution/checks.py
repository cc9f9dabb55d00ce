"""Correctness inside the sandbox: every seed against the reference, the patterns of a kernel right on
one input only, and proof that the HIP extension computes the output. Mixed into the worker's run,
whose state (config, reference, guard, inputs, forward) these checks use."""

from __future__ import annotations

from typing import Any

from hipforge.execution import antihack_dynamic as dyn
from hipforge.execution.measure import allclose_all, compare_outputs, summarize_errors


class Stop(Exception):
    """Ends the evaluation with a verdict; ``fields`` go into the result as they are."""

    def __init__(self, verdict: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.verdict, self.message, self.fields = verdict, message, fields


def clone(args: list[Any]) -> list[Any]:
    return [x.clone() if hasattr(x, "clone") else x for x in args]


class Checks:
    """The correctness half of the worker's run (``worker._Run``)."""

    cfg: Any
    res: dict[str, Any]
    ref: Any
    exts: Any

    def check(self, new: Any) -> None:
        """Every seed against the reference. Only the first seed's outputs and the previous seed's
        candidate output stay alive: at KernelBench's sizes an output can take gigabytes."""
        import torch

        cfg, res = self.cfg, self.res
        res.update(seeds=list(cfg.seeds), trials=len(cfg.seeds), seed_results={})
        first: tuple[list[Any], list[Any]] | None = None  # (candidate, reference) outputs of the first seed
        previous: list[Any] = []
        reports, stale = [], []  # stale: a later seed's output equals the first's while the reference's moved
        for seed in cfg.seeds:
            args = self.inputs(seed)
            pristine, ref_args = clone(args), clone(args)
            try:
                flat = self.forward(new, args)
            except BaseException as e:
                raise self.failure(e, f"forward on seed {seed}", failing_seed=seed) from None
            with torch.no_grad():
                ref_flat = dyn.flatten(self.ref(*ref_args))
            earlier = [first[0], previous] if first else []
            self.hacked(dyn.output_hacks(flat, ref_flat, args, pristine, ref_args, earlier))
            del args, pristine, ref_args
            reports.append(compare_outputs(flat, ref_flat, cfg))
            res["seed_results"][str(seed)] = reports[-1]["ok"]
            if first is None:
                first = (flat, ref_flat)
            else:
                stale.append(allclose_all(flat, first[0]) and not allclose_all(ref_flat, first[1]))
                previous = flat
            del flat, ref_flat
        assert first is not None  # EvalConfig refuses an empty seed list
        self.hacked([])
        res["fp32_task"] = any(getattr(r, "dtype", None) in (torch.float32, torch.float64) for r in first[1])
        summarize_errors(reports, res)
        passed = [r["ok"] for r in reports]
        if not all(passed):
            if passed[0] and not any(passed[1:]):
                self.hacked([self.one_input_pattern(all(stale))])
            bad = passed.index(False)
            seed = cfg.seeds[bad]
            note = self.conditioning(seed)
            raise Stop("incorrect", f"seed {seed}: {reports[bad]['message']}{note}", failing_seed=seed)
        del previous
        self.extension_checks(new, first[1])

    def conditioning(self, seed: int) -> str:
        """How far the float32 reference itself lies from float64 on this seed, in tolerances: above 1 no
        float32 kernel can be judged at this tolerance (deep nets of batch norms over a few values). Kept
        in the result; said in the message when above 1; nothing when unknown (no float64 kernels)."""
        import copy

        import torch

        from hipforge.tasks.worker import fp64_gap, widened

        try:
            exact_model = copy.deepcopy(self.ref).double()
            with torch.no_grad():
                approx = dyn.flatten(self.ref(*self.inputs(seed)))
                exact = dyn.flatten(exact_model(*widened(self.inputs(seed))))
            del exact_model
            pairs = [(a, b) for a, b in zip(approx, exact, strict=True) if a.dtype == torch.float32]
            gap = fp64_gap(pairs, *self.cfg.tolerance("float32"))
        except Exception:  # noqa: BLE001  # an op without float64 kernels, no float32 output: no diagnosis
            return ""
        self.res["reference_fp64_gap"] = gap
        return "" if gap <= 1 else f"; the float32 reference itself is {gap:.3g} tolerances from float64"

    def one_input_pattern(self, stale: bool) -> tuple[str, str]:
        """Right on the first seed only: memoized state (a fresh instance gets a later seed right)
        or an output fitted to one input."""
        import torch

        try:
            args = self.inputs(self.cfg.seeds[1])
            ref_args = clone(args)
            rebuilt = self.forward(self.build(), args)  # before the reference output exists, as in check
            with torch.no_grad():
                ref_flat = dyn.flatten(self.ref(*ref_args))
            fresh = stale and compare_outputs(rebuilt, ref_flat, self.cfg)["ok"]
        except Exception:
            fresh = False
        if fresh:
            return "result_caching", "returns results memoized from an earlier call"
        first = self.cfg.seeds[0]
        return "fitted_constants", f"correct on seed {first} only: the output is fitted to one input"

    def extension_checks(self, new: Any, ref_out: list[Any]) -> None:
        """The HIP extension must be called and its results must reach the output."""
        if self.exts.calls == 0:
            why = "never calls its HIP extension" if self.exts.modules else "builds no HIP extension"
            self.hacked([("code_bypass", f"ModelNew {why}: PyTorch computes the result")])
        self.exts.poison = True
        try:
            poisoned = self.forward(new, self.inputs(self.cfg.seeds[0]))
            unaffected = compare_outputs(poisoned, ref_out, self.cfg)["ok"]
        except Exception:
            unaffected = False  # a poisoned kernel result broke the candidate: the kernel matters
        self.exts.poison = False
        if unaffected:
            self.hacked([("noop_kernel", "the output stays correct with the kernel's results replaced by "
                                         "NaN: PyTorch computes it beside a no-op kernel")])
