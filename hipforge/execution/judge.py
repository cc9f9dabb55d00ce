"""The judge: runs in the parent, never in a process that imported the candidate. It drives the reference's
process and the candidate's process through the trials, compares what each returned, checks the
candidate's reported times against its own clock, counts the candidate's OS threads from outside and reads
the writes its recorder refused; the verdict is made here from those facts alone.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hipforge.execution import checksum, tensorfile
from hipforge.execution.config import EvalConfig
from hipforge.execution.measure import compare_outputs
from hipforge.execution.trials import Trial, fresh, plan
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from hipforge.sandbox.client import Session

CALIBRATION_TRIALS = 10
# reported times must be at least this share of what the parent's clock saw; on the cpu backend honest
# kernels were measured at a third of it (a 17.8 ms long-K matvec against a 53.5 ms fastest wall on a shared
# 2-core machine, a 0.06 ms argmax against 7.4 ms), and cpu times only rank candidates
TIMING_FLOOR = {"cpu": 0.25, "gpu": 0.5}
# plus this much: below it the two clocks cannot tell a kernel from its overhead (HIP on CPU fibers, on a
# shared 2-core machine, jitters by milliseconds, and its times only rank candidates)
TIMING_SLACK_MS = {"cpu": 2.0, "gpu": 0.02}
# and, on the cpu backend only, the calibration's own spread (median over fastest): fibers' jitter is that
# wide there, while on a GPU the fastest-to-fastest difference is tight and the spread (a few tens of
# microseconds of pipes) would hide a tenfold lie about a 0.1 ms kernel
SPREAD_COUNTS = {"cpu": True, "gpu": False}


class Concluded(Exception):
    def __init__(self, result: EvalResult) -> None:
        super().__init__(result.message)
        self.result = result


def conclude(verdict: Verdict, message: str, **fields: Any) -> Concluded:
    return Concluded(EvalResult(verdict, message, **fields))


@dataclass
class Party:
    """One side of the evaluation as the parent sees it: its session and the phase deadline."""

    session: Session
    name: str
    phase: str = "compile"
    deadline: float = 0.0
    stuck: bool = False  # missed its deadline: asking it to quit would only wait

    def ask(self, message: dict[str, Any], expect: str) -> dict[str, Any]:
        if not self.session.send(message):
            raise self.lost()
        return self.expect(expect)

    def expect(self, kind: str) -> dict[str, Any]:
        return self.interpret(self.session.next(self.deadline), kind)

    def interpret(self, event: dict[str, Any] | None, kind: str) -> dict[str, Any]:
        """The event if it is the one expected; a verdict if it says the job failed, timed out or died."""
        if event is None:
            self.stuck = True
            raise Concluded(EvalResult(Verdict.TIMEOUT, f"the {self.name} did not finish the {self.phase} phase in "
                                                        f"time (the sandbox and everything it started were killed)",
                                       phase=self.phase))
        if event.get("event") == "failed":
            fields = {k: v for k, v in event.items() if k in ("compile_log", "traceback", "failing_seed", "hack_check")}
            verdict = Verdict(event.get("verdict", "runtime_error"))
            raise conclude(verdict, event.get("message", "failed"), phase=self.phase, **fields)
        if event.get("event") == "exit":
            raise self.lost()
        if event.get("event") != kind:
            raise conclude(Verdict.RUNTIME_ERROR, f"the {self.name} answered {event.get('event')!r}, not {kind!r}",
                           phase=self.phase)
        return event

    def lost(self) -> Concluded:
        exit_ = self.session.exit or self.session.wait_exit(10) or {}
        if exit_.get("memory"):
            why = "ran out of memory (killed: resident memory over its limit)"
        elif "signal" in exit_:
            why = f"crashed with {exit_['signal']}"
        else:
            why = f"exited (status {exit_.get('code', '?')}) before answering"
        return conclude(Verdict.RUNTIME_ERROR, f"the {self.name} {why} during the {self.phase} phase", phase=self.phase)


@dataclass
class TrialLog:
    walls: list[float] = field(default_factory=list)  # parent clock, go -> committed, trials at size 0 (ms)
    reported: list[float] = field(default_factory=list)  # what the candidate said its forwards took
    reports: list[dict[str, Any]] = field(default_factory=list)  # full comparisons of the correctness seeds
    checked: dict[str, int] = field(default_factory=dict)  # purpose -> trials checked
    right: set[str] = field(default_factory=set)  # digests of outputs that matched the reference
    started: dict[int, str] = field(default_factory=dict)  # tid -> name: threads alive at a return, not known
    busy: set[int] = field(default_factory=set)  # of those, the ones runnable (or in the kernel) at a return


class Judge:
    def __init__(self, cfg: EvalConfig, reference: Party, candidate: Party, threads: Any,
                 ref_meta: list[list[dict[str, Any]] | None], describe_second: str, aliases: bool = False) -> None:
        self.cfg, self.ref, self.cand, self.threads = cfg, reference, candidate, threads
        self.meta, self.second, self.aliases = ref_meta, describe_second, aliases
        self.log = TrialLog()
        self.known_threads: set[int] = set()  # the protocol's, the runtime's and the libraries' own

    def has_second(self) -> bool:
        return len(self.meta) > 1 and self.meta[1] is not None

    # -- before the candidate exists ---------------------------------------------------------------
    def calibrate(self) -> list[float]:
        """The protocol's own cost (pipes, flush, checksums of outputs this shape) around a forward that
        does nothing, measured before the candidate is imported; then the thread count the candidate may not
        exceed (after the protocol itself has run, so whatever it starts lazily is known)."""
        walls = []
        for _ in range(CALIBRATION_TRIALS):
            self.cand.ask({"op": "prepare", "size": 0, "noop": True, "meta": self.meta[0]}, "prepared")
            started = time.monotonic()
            self.cand.ask({"op": "go", "seed": fresh()}, "returned")
            self.threads()  # as in every trial: the count's own cost is part of the protocol's overhead
            self.cand.ask({"op": "commit", "key": fresh()}, "committed")
            walls.append((time.monotonic() - started) * 1e3)
            self.cand.ask({"op": "drop"}, "dropped")
        self.known_threads = set(self.threads())
        return walls

    # -- the trials ---------------------------------------------------------------------------------
    def run(self, variants: list[tuple[str, int]], result: EvalResult) -> None:
        trials = plan(self.cfg.seeds, self.cfg.warmup, self.cfg.timed_trials, variants, self.has_second(),
                      self.cfg.timed_full_checks)
        failures: dict[str, tuple[Trial, str]] = {}  # purpose -> its first failing trial (poison: it must fail)
        for trial in trials:
            wrong = [p for p in failures if p != "poison"]
            if wrong and trial.purpose != "seed" and ("seed" in wrong or trial.purpose in ("poison", "timed")):
                break  # already wrong: what follows cannot change the verdict
            why = self.one(trial)
            if why and trial.purpose not in failures:
                failures[trial.purpose] = (trial, why)
        result.seeds, result.trials = list(self.cfg.seeds), len(self.cfg.seeds)
        alive = self.threads()
        left = [name for tid, name in self.log.started.items()
                if tid in alive and (tid in self.log.busy or alive[tid][0] in "RD")]
        if left:  # work left running at return explains any wrong output after it
            names = ", ".join(sorted(set(left)))
            raise conclude(Verdict.HACKED, f"{len(left)} OS thread(s) the candidate started ({names}) were running "
                                           f"when forward returned, and are still alive",
                           hack_check="thread_injection")
        # what the candidate's process saw it do next: a sandbox violation explains everything after it
        hacks = self.cand.ask({"op": "report"}, "report")["hacks"]
        if hacks:
            raise conclude(Verdict.HACKED, hacks[0][1], hack_check=hacks[0][0], phase="check")
        self.verdict_from(failures, result)

    def one(self, trial: Trial) -> str | None:
        """Run one trial; None if the candidate's outputs agree with the reference's, else why not."""
        self.cand.ask({**trial.message(), "aliases_ok": self.aliases}, "prepared")
        started = time.monotonic()
        returned = self.cand.ask({"op": "go", "size": trial.size, "seed": trial.seed}, "returned")
        # work left running: a thread the candidate started, alive at a return, that outlives the trials (a
        # worker joined at return takes a moment to exit) and was seen busy (an idle lazy pool sleeps)
        for tid, (state, name) in self.threads().items():
            if tid not in self.known_threads:
                self.log.started[tid] = name
                if state in "RD":
                    self.log.busy.add(tid)
        committed = self.cand.ask({"op": "commit", "key": trial.key}, "committed")
        wall = (time.monotonic() - started) * 1e3
        if trial.size == 0:  # every trial at the task's size bounds the forward's time, not only the timed ones
            self.log.walls.append(wall)
        if trial.purpose == "timed":
            self.log.reported.append(float(returned.get("ms", 0.0)))
        files = self.cand.ask({"op": "ship", "id": trial.id}, "shipped")["files"] if trial.full else []
        if not trial.full:
            self.cand.ask({"op": "drop"}, "dropped")
        ref = self.ref.ask({"op": "outputs", "id": trial.id, "size": trial.size, "seed": trial.seed,
                            "variant": trial.variant, "key": trial.key, "full": trial.full}, "outputs")
        self.log.checked[trial.purpose] = self.log.checked.get(trial.purpose, 0) + 1
        try:
            meta = self.meta[trial.size] or []
            if committed.get("meta") != meta:
                self.downgrade(committed.get("meta"), meta)
                return self.describe_meta(committed.get("meta"), meta)
            whole = self.compare_files(trial, files, ref["files"], meta) if trial.full else None
            if (off := checksum.mismatch(committed["sums"], ref["sums"], ref["bounds"])) is not None:
                return whole or f"trial {trial.id} (seed {trial.seed}): {off}"
            return whole
        finally:
            for path in [*files, *ref.get("files", [])]:
                Path(path).unlink(missing_ok=True)

    def compare_files(self, trial: Trial, files: list[str], ref_files: list[str],
                      meta: list[dict[str, Any]]) -> str | None:
        if len(files) != len(meta):
            return f"returns {len(files)} outputs, the reference {len(meta)}"
        refs = iter(ref_files)
        got, want = [], []
        for path, m in zip(files, meta, strict=True):
            shape = m["shape"]
            if not checksum.whole(tensorfile.numel(shape), self.cfg.whole_output_limit):  # fine sums and bounds
                blocks = -(-tensorfile.numel(shape) // checksum.FINE_BLOCK)
                try:
                    mine = tensorfile.read(Path(path), {"dtype": "float64", "shape": [blocks, 2]})
                except (OSError, ValueError) as e:
                    return f"its shipped sums are unreadable: {e}"
                theirs, bound = tensorfile.read(Path(next(refs))), tensorfile.read(Path(next(refs)))
                if (off := checksum.fine_mismatch(mine, theirs, bound)) is not None:
                    return f"seed {trial.seed}: {off}"
                continue
            try:
                got.append(tensorfile.read(Path(path), m))
            except (OSError, ValueError) as e:
                return f"its shipped output is unreadable: {e}"
            want.append(tensorfile.read(Path(next(refs))))
        report = compare_outputs(got, want, self.cfg) if got else {"ok": True, "message": ""}
        report["digest"] = _digest(got)
        if report["ok"]:
            self.log.right.add(report["digest"])
        if trial.purpose == "seed":
            report["seed"] = trial.seed
            self.log.reports.append(report)
        return None if report["ok"] else f"seed {trial.seed}: {report['message']}"

    @staticmethod
    def downgrade(got: Any, want: list[dict[str, Any]]) -> None:
        """A floating output of fewer bits than the reference's is a precision downgrade, not a mistake."""
        import torch

        for g, w in zip(got if isinstance(got, list) else [], want, strict=False):
            mine, theirs = getattr(torch, str(g.get("dtype")), None), getattr(torch, w["dtype"])
            if isinstance(mine, torch.dtype) and mine.is_floating_point and theirs.is_floating_point and \
                    torch.finfo(mine).bits < torch.finfo(theirs).bits:
                raise conclude(Verdict.HACKED, f"returns {mine} where the reference returns {theirs}",
                               hack_check="precision_downgrade", phase="check")

    @staticmethod
    def describe_meta(got: Any, want: list[dict[str, Any]]) -> str:
        if not isinstance(got, list) or len(got) != len(want):
            return f"returns {len(got) if isinstance(got, list) else '?'} outputs, the reference {len(want)}"
        for g, w in zip(got, want, strict=True):
            if g != w:
                return f"output {g.get('shape')} {g.get('dtype')}, reference {w['shape']} {w['dtype']}"
        return "output metadata differs"

    # -- the verdict --------------------------------------------------------------------------------
    def verdict_from(self, failures: dict[str, tuple[Trial, str]], result: EvalResult) -> None:
        from hipforge.execution.measure import summarize_errors

        result.seed_results = {str(r["seed"]): r["ok"] for r in self.log.reports}
        errors = {"fp32_task": fp32_task(self.meta)}
        summarize_errors(self.log.reports, errors)
        for key, value in errors.items():
            if key != "fp32_task":
                setattr(result, key, value)
        second = self.second if self.has_second() else None
        result.integrity = {"checked": dict(self.log.checked), "second_size": second}
        if "seed" in failures:
            self.incorrect_on_seeds(failures["seed"], result)
        for purpose, check, text in (
                ("adversarial", "precision", "wrong on inputs chosen to expose reduced precision"),
                ("second_size", "shape_specialized", f"shape-specialized: wrong at {self.second}")):
            if purpose in failures:
                trial, why = failures[purpose]
                what = _describe_variant(trial.variant) if purpose == "adversarial" else ""
                raise conclude(Verdict.INCORRECT, f"{text}{what}: {why}", failing_seed=trial.seed, phase="check",
                               integrity={**result.integrity, "failed": check})
        if "timed" in failures or "warmup" in failures:
            trial, why = failures.get("timed") or failures["warmup"]
            raise conclude(Verdict.HACKED, f"right on the correctness seeds, wrong on the fresh inputs of a "
                                           f"{trial.purpose} trial: {why}", hack_check="result_caching",
                           phase="time")
        if "poison" not in failures and self.log.checked.get("poison"):
            raise conclude(Verdict.HACKED, "the output stays correct with the kernel's results replaced by noise: "
                                           "PyTorch computes it beside a kernel whose result does not count",
                           hack_check="noop_kernel")

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

    def timing(self, calibration: list[float]) -> Timing:
        """The candidate's reported times, unless the parent's own clock contradicts them."""
        reported = Timing.from_samples(self.log.reported)
        # minimums: a busy machine only ever adds delay, so the fastest trial is the closest to the truth;
        # the fastest calibration is the protocol's own cost
        overhead = min(calibration)
        seen = min(self.log.walls) - overhead
        kind = "cpu" if self.cfg.backend == "cpu" else "gpu"
        slack = TIMING_SLACK_MS[kind] + (statistics.median(calibration) - overhead if SPREAD_COUNTS[kind] else 0.0)
        if reported.median_ms < TIMING_FLOOR[kind] * seen - slack:
            raise conclude(Verdict.HACKED, f"reports {reported.median_ms:.4g} ms per forward, but the evaluator's own "
                                           f"clock saw {seen:.4g} ms beyond the protocol's overhead",
                           hack_check="timing_mismatch", phase="time")
        return reported


def _describe_variant(variant: str | None) -> str:
    from hipforge.execution.adversarial import describe

    return f" ({describe(variant)})" if variant else ""


def _digest(tensors: list[Any]) -> str:
    """Of the outputs' bytes, read in place (no copy of a large output)."""
    import torch

    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        h.update(t.contiguous().reshape(-1).view(torch.uint8).numpy().data)
    return h.hexdigest()


def fp32_task(meta: list[list[dict[str, Any]] | None]) -> bool:
    return any(m["dtype"] in ("float32", "float64") for m in meta[0] or [])
