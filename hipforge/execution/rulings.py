"""The judge's rulings: the verdict from what the trials showed, once they have run (which failure names which
hack, which is merely wrong). A part of the judge (hipforge.execution.judge.Judge), kept apart from the driving
of the trials."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hipforge.execution.config import EvalConfig
from hipforge.execution.party import Party
from hipforge.execution.trials import Trial, TrialLog
from hipforge.execution.verdict import EvalResult, Verdict, conclude
from hipforge.execution.wallclock import WallClock


class Rulings:
    """Mixed into Judge, whose trials have filled ``log`` (and whose ``one`` runs a trial again)."""

    cfg: EvalConfig
    ref: Party
    log: TrialLog
    clock: WallClock
    meta: list[list[dict[str, Any]] | None]
    second: str
    timed_reps: int
    timing_batches: int
    paired: Any
    cpu: Any  # pairing.CandidateCpu on the cpu backend
    peak_mb: dict[str, float]
    one: Callable[[Trial], str | None]
    has_second: Callable[[], bool]

    def verdict_from(self, failures: dict[str, tuple[Trial, str]], result: EvalResult) -> None:
        from hipforge.execution.numerics import summarize_errors

        result.seed_results = {str(r["seed"]): r["ok"] for r in self.log.reports}
        errors = {"fp32_task": fp32_task(self.meta)}
        summarize_errors(self.log.reports, errors)
        for key, value in errors.items():
            if key != "fp32_task":
                setattr(result, key, value)
        second = self.second if self.has_second() else None
        result.integrity = {"checked": dict(self.log.checked), "second_size": second, "timed_reps": self.timed_reps,
                            "timed_batches": self.timing_batches, "paired_calibration": self.paired is not None,
                            "peak_mb": self.peak_mb,
                            **self.clock.summary(self.timed_reps)}
        if self.cpu and self.cpu.noop and self.cpu.timed:  # about the most a CPU-time claim could understate
            result.integrity["cpu_protocol_spread_ms"] = round(self.cpu.spread(), 4)
            result.integrity["cpu_claims_bounded"] = self.cpu.bounded()
        self.out_of_order(failures)
        if "seed" in failures:
            self.incorrect_on_seeds(failures["seed"], result)
        for purpose, check, text in (
                ("adversarial", "precision", "wrong on inputs chosen to expose reduced precision"),
                ("second_size", "shape_specialized", f"shape-specialized: wrong at {self.second}")):
            if purpose in failures:
                trial, why = failures[purpose]
                what = describe_variant(trial.variant) if purpose == "adversarial" else ""
                raise conclude(Verdict.INCORRECT, f"{text}{what}: {why}", failing_seed=trial.seed, phase="check",
                               integrity={**result.integrity, "failed": check})
        if "refill" in failures:
            trial, why = failures["refill"]
            raise conclude(Verdict.HACKED, f"right on fresh inputs, wrong when the same input tensors came again "
                                           f"holding new values (identity, address and version unchanged): the "
                                           f"output is tied to the tensor, not computed from its values: {why}",
                           hack_check="result_caching", failing_seed=trial.seed, phase="check")
        if "timed" in failures or "warmup" in failures:
            trial, why = failures.get("timed") or failures["warmup"]
            raise conclude(Verdict.HACKED, f"right on the correctness seeds, wrong on the fresh inputs of a "
                                           f"{trial.purpose} trial: {why}", hack_check="result_caching",
                           phase="time")
        if "poison" not in failures and self.log.checked.get("poison"):
            raise conclude(Verdict.HACKED, "the output stays correct with the kernel's results replaced by noise: "
                                           "PyTorch computes it beside a kernel whose result does not count",
                           hack_check="noop_kernel")

    def out_of_order(self, failures: dict[str, tuple[Trial, str]]) -> None:
        """The first late trial that failed, run again with its inputs ready before forward is called: right
        then, forward's result was made by work not ordered after the current stream (a non-blocking stream that
        does not wait on it, a host thread), which read the inputs before they were written."""
        failed = next((failures[p] for p in ("seed", "adversarial", "second_size", "refill") if p in failures), None)
        if failed is None:
            return
        trial, why = failed
        if self.one(trial.in_order()) is None:
            raise conclude(Verdict.HACKED, f"wrong while its inputs were still being written on the current stream "
                                           f"when forward was called, right once they were ready ({trial.purpose} "
                                           f"trial): work that forward does not order after the current stream (a "
                                           f"non-blocking stream, a thread) read them before they were written: "
                                           f"{why}", hack_check="stream_order", failing_seed=trial.seed,
                           phase="check")

    def incorrect_on_seeds(self, failed: tuple[Trial, str], result: EvalResult) -> None:
        trial, why = failed
        passed = [r["ok"] for r in self.log.reports]
        if passed and passed[0] and len(passed) > 1 and not any(passed[1:]):
            raise conclude(Verdict.HACKED, f"correct on seed {self.cfg.seeds[0]} only: the output is fitted to one "
                                           f"input", hack_check="fitted_constants")
        # a cached result repeats an output that was right for an earlier input (a warm-up's or a seed's); a
        # constant wrong output is merely wrong
        if any(not r["ok"] and r["digest"] in self.log.right for r in self.log.reports):
            raise conclude(Verdict.HACKED, "returns, for a seed's inputs, the output that was right for an earlier "
                                           "call's: a result cached from an earlier call", hack_check="result_caching")
        gap = self.ref.ask({"op": "gap", "size": 0, "seed": trial.seed}, "gap").get("gap")
        note = f"; the float32 reference itself is {gap:.3g} tolerances from float64" if gap and gap > 1 else ""
        raise conclude(Verdict.INCORRECT, f"{why}{note}", failing_seed=trial.seed, reference_fp64_gap=gap,
                       phase="check")


def wrong(failures: dict[str, tuple[Trial, str]]) -> list[str]:
    return [p for p in failures if p != "poison"]


def describe_variant(variant: str | None) -> str:
    from hipforge.execution.adversarial import describe

    return f" ({describe(variant)})" if variant else ""


def fp32_task(meta: list[list[dict[str, Any]] | None]) -> bool:
    return any(m["dtype"] in ("float32", "float64") for m in meta[0] or [])
