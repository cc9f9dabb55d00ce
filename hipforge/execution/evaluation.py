"""One evaluation of a candidate against its task, from the parent's side: its servers and jobs (the
reference's process, the candidate's process, the calibrator; the jobs themselves are evaluation_jobs.py), the
device memory it holds, the judge that drives the trials, and the record of where its seconds went."""

from __future__ import annotations

import secrets
import time
from contextlib import ExitStack
from typing import Any

from hipforge.execution.antihack_guard import CANARY
from hipforge.execution.config import GPU_BACKENDS, EvalConfig
from hipforge.execution.device_lock import DeviceLock, Phases, device_key
from hipforge.execution.device_memory import DEVICE_MEMORY, Caps, caps_mb, share_mb
from hipforge.execution.evaluation_jobs import EvaluationJobs
from hipforge.execution.judge import Judge
from hipforge.execution.pairing import frozen
from hipforge.execution.party import Party
from hipforge.execution.rulings import fp32_task
from hipforge.execution.trials import fresh
from hipforge.execution.verdict import Concluded, EvalResult, Timing, Verdict
from hipforge.sandbox.client import Server
from hipforge.sandbox.pool import ServerPool


class Evaluation(EvaluationJobs):
    def __init__(self, cfg: EvalConfig, mode: str, pool: ServerPool, candidate: str, task: str,
                 baseline: dict[str, Any] | None, gate_known: dict[str, Any] | None) -> None:
        from hipforge.tasks.resize import describe, second_size

        super().__init__(cfg, mode, pool, candidate, gate_known)
        self.baseline, self.fp32, self.owns_device = baseline, False, False
        self.caps = Caps(0.0, 0.0)
        self.exits: dict[str, dict[str, Any]] = {}  # job name -> its exit event, once it has quit
        self.capacity_mb = 0.0  # the device's memory, as the reference's process found it
        self.stages: dict[str, float] = {}  # stage -> seconds it took (the record of where an evaluation went)
        self.last_mark = 0.0
        resized = second_size(task) if cfg.second_size else None
        self.tasks = [task] + ([resized.source] if resized else [])
        self.second = describe(resized.changed) if resized else ""

    def run(self, ref_server: Server, cand_server: Server, device_lock: DeviceLock) -> EvalResult:
        result = EvalResult(Verdict.CORRECT, "")
        self.canary = secrets.token_hex(8)
        self.last_mark = time.monotonic()
        parties: list[Party] = []
        self.exits = {}
        self.servers = ExitStack()  # the calibrator's, if a paired batch opens one
        phases = Phases(device_lock, self.cfg.backend)
        try:
            self.evaluate(ref_server, cand_server, phases, result, parties)
        except Concluded as c:  # what was learnt before the verdict stays in the record
            own = ("verdict", "message", "phase", "hack_check")
            c.result.__dict__.update({k: v for k, v in result.__dict__.items()
                                      if k not in own and v not in (None, "", [], {}) and not getattr(c.result, k)})
            result = c.result
        finally:
            exits = {**self.exits, **self.finish(parties)}
            self.servers.close()
        result.output_tail = cand_server.tail() if cand_server.alive() else result.output_tail
        result.integrity["stages_s"] = self.stages
        if phases.spent:
            result.integrity["device_phases"] = phases.summary()
        if self.canary in result.to_json():  # seen here, in anything it sent back, whatever it silenced
            result.verdict, result.hack_check = Verdict.HACKED, "secret_access"
            result.message = "the environment's planted canary value left the candidate's process"
        read_exit(result, exits.get("candidate"), self.escapes)
        return result

    def evaluate(self, ref_server: Server, cand_server: Server, phases: Phases, result: EvalResult,
                 parties: list[Party]) -> None:
        cfg = self.cfg
        self.prebuild(cand_server)
        self.mark("prebuild")
        ref = self.open(ref_server, "reference", parties, role="reference_job:run", task_sources=self.tasks,
                        rss_limit_mb=cfg.reference_memory_limit_mb, compile=self.compile_wanted())
        sized = ref.expect("footprint")
        self.capacity_mb = float(sized["capacity_mb"])
        self.mark("reference_start")
        # alone on the device, nothing is capped: what it then runs out of is the device's
        flush = cfg.flush_l2_mb if cfg.backend in GPU_BACKENDS else 0  # the candidate's L2 flush buffer
        self.caps = Caps(0.0, 0.0) if self.owns_device else caps_mb(sized["mb"], flush)
        with DEVICE_MEMORY.hold(device_key(cfg.backend), share_mb(sized["mb"], flush), sized["capacity_mb"],
                                alone=self.owns_device):
            self.mark("memory_wait")
            try:
                ref.session.send({"op": "admit", "device_memory_mb": self.caps.reference})
                ref.deadline = time.monotonic() + cfg.compile_timeout_s  # the wait for memory is not its time
                self.judged(ref, cand_server, phases, result, parties)
            finally:  # its processes hold their device memory until they exit: the hold ends after them
                self.exits = self.finish(parties)

    def judged(self, ref: Party, cand_server: Server, phases: Phases, result: EvalResult,
               parties: list[Party]) -> None:
        cfg = self.cfg
        ready = ref.expect("ready")
        meta = ready["meta"]
        self.fp32 = fp32_task(meta)
        self.mark("reference_ready")
        if cfg.gate:
            self.gate(cand_server, result)
            self.mark("gate")
        cand = self.open(cand_server, "candidate", parties, role="candidate_job:run", task_sources=self.tasks,
                         candidate_source=self.candidate, record_writes=True, no_processes=True,
                         rss_limit_mb=cfg.memory_limit_mb + int(ready["rss_mb"]),
                         device_memory_mb=self.caps.candidate, env={CANARY: self.canary})
        result.isolation = cand.expect("baseline")["isolation"]
        self.mark("candidate_start")
        judge = Judge(cfg, ref, cand, cand_server.threads, meta, self.second, ready.get("aliases", False),
                      int(ready.get("bytes_per_rep", 0)), phases,
                      calibrator=lambda: self.calibrator(parties), device=ready.get("device", ""),
                      written=int(ready.get("written", 0)), freeze=lambda: frozen(cand_server),
                      capacity_mb=self.capacity_mb)
        # the calibration is what the trials' walls are weighed against: a timed phase like theirs, so no other
        # evaluation's work shares the device (or the cores) with either
        with judge.phases.timed():
            judge.calibrate()
        self.mark("calibrate")
        cand.session.send({"op": "import"})
        result.compile_log = self.import_candidate(cand, "ready")["compile_log"]
        self.mark("import")
        cand.phase = ref.phase = "check"
        with judge.holding(judge.phases.shared()):
            variants = self.variants(ref) if cfg.adversarial and self.fp32 else []
        self.mark("variants")
        judge.run(variants, result)
        self.mark("trials")
        cand.phase = ref.phase = "time"
        result.runtime = judge.timing()
        if judge.reference:  # cpu: timed round by round beside the candidate's timed trials
            judge.reference.conclude(result, judge.candidate_ms())
        else:
            with judge.holding(judge.phases.timed()):
                self.reference_timing(ref, result)
        self.mark("reference_timing")
        result.timed_trials, result.phase = cfg.timed_trials, "done"

    def mark(self, stage: str) -> None:
        now = time.monotonic()
        self.stages[stage] = round(now - self.last_mark, 3)
        self.last_mark = now

    def calibrator(self, parties: list[Party]) -> tuple[Party, Server]:
        """A job on a server of its own that never imports the candidate: the no-op trials of a paired batch
        (timed_batches.TimedBatches.pair), with its server (its threads counted, its job stopped to be read)."""
        server = self.servers.enter_context(self.pool.server())
        party = self.open(server, "calibrator", parties, role="candidate_job:run", task_sources=self.tasks,
                          candidate_source="", rss_limit_mb=self.cfg.memory_limit_mb)
        party.expect("baseline")
        party.phase, party.deadline = "time", time.monotonic() + self.cfg.run_timeout_s
        return party, server

    def compile_wanted(self) -> bool:
        wanted = self.cfg.time_compiled_ref if self.cfg.time_compiled_ref is not None else self.cfg.backend != "cpu"
        return bool(wanted) and not self.baseline

    def variants(self, ref: Party) -> list[tuple[str, int]]:
        """(variant, seed): each trial runs at the seed its usability was judged on (at another seed the
        reference may be ill-conditioned on the same transform)."""
        seed = fresh()
        return [(kind, seed) for kind in ref.ask({"op": "variants", "seed": seed}, "variants")["usable"]]

    def reference_timing(self, ref: Party, result: EvalResult) -> None:
        if self.baseline:  # this task's reference was timed before on this machine
            result.ref_eager = Timing(**self.baseline["ref_eager"])
            if self.baseline.get("ref_compiled"):
                result.ref_compiled = Timing(**self.baseline["ref_compiled"])
            result.message = "correct on all trials (reference timings from the baseline cache)"
            return
        seeds = [fresh() for _ in range(self.cfg.warmup + self.cfg.timed_trials)]
        timed = ref.ask({"op": "time", "seeds": seeds}, "timed")
        result.ref_eager = Timing(**timed["ref_eager"])
        if timed.get("ref_compiled"):
            result.ref_compiled = Timing(**timed["ref_compiled"])
        result.message = "correct on all trials" + (
            f" (torch.compile reference failed: {timed['compile_error']})" if timed.get("compile_error") else "")


def read_exit(result: EvalResult, exit_: dict[str, Any] | None, escapes: list[str]) -> None:
    """The verdict is final only once the candidate's job exit is read (``exit_``; None: the job never
    started): what the sandbox refused after its last answer (a process started from a thread, an atexit
    handler or a static destructor as it exits) is told there alone. ``escapes``: writes refused earlier."""
    if exit_ is not None and "recorded" not in exit_ and result.verdict == Verdict.CORRECT:
        result.verdict = Verdict.RUNTIME_ERROR  # the server never reported the exit: nothing vouches for it
        result.message = ("the candidate's process left no exit record (its sandbox server was lost first): "
                          "what it did after its last answer is unknown")
    exit_ = exit_ or {}
    if (spawns := exit_.get("spawns")) and result.hack_check != "process_spawn":
        overrule(result, "process_spawn", f"tried to start a process (refused by the sandbox, recorded at "
                                          f"its exit): {', '.join(spawns[:3])}")
    if writes := escapes + (exit_.get("writes") or []):
        overrule(result, "sandbox_escape", f"wrote outside its directories (refused): {', '.join(writes[:3])}")


def overrule(result: EvalResult, check: str, message: str) -> None:
    """What the sandbox recorded outside the candidate's process makes the verdict hacked whatever the trials
    said; the verdict it replaces stays in the message."""
    before = f"; before that: {result.verdict.value}: {result.message}"[:600] if result.message else ""
    result.verdict, result.hack_check, result.message = Verdict.HACKED, check, message + before
