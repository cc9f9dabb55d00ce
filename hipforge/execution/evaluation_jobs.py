"""The jobs one evaluation opens on its servers, from the parent's side: each job's limits and role, its quitting
and the exit it reports (with the writes its recorder refused), and the jobs that run no candidate code with
the build cache writable (the compile gate, each build the candidate asks for while it is imported, and on GPUs
the prebuild before device memory is held). evaluation.Evaluation runs the evaluation itself on them."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hipforge.execution import quiet
from hipforge.execution.antihack_guard import CANARY
from hipforge.execution.compile_cache import seal
from hipforge.execution.config import GPU_BACKENDS, EvalConfig
from hipforge.execution.party import Party
from hipforge.execution.verdict import EvalResult, Verdict, conclude
from hipforge.sandbox.client import Server
from hipforge.sandbox.pool import ServerPool

EXIT_WAIT_S = 30.0


class EvaluationJobs:
    def __init__(self, cfg: EvalConfig, mode: str, pool: ServerPool, candidate: str,
                 gate_known: dict[str, Any] | None) -> None:
        self.cfg, self.mode, self.pool, self.candidate, self.gate_known = cfg, mode, pool, candidate, gate_known
        self.canary = ""  # planted in the candidate's environment: each run draws its own
        self.escapes: list[str] = []  # writes the prebuild's recorder refused
        self.prebuilt: list[str] = []  # the builds it made

    def open(self, server: Server, name: str, parties: list[Party], **job: Any) -> Party:
        cfg = self.cfg
        job = {"nonce": secrets.token_hex(16), "mode": self.mode, "config": cfg.to_dict(), "cache_dir": cfg.cache_dir,
               "uid": cfg.sandbox_uid, "gid": cfg.sandbox_uid, "tmp_size_mb": cfg.tmp_size_mb,
               "max_file_mb": cfg.max_file_mb, "max_processes": cfg.max_processes, "cache_writable": False,
               "record_writes": False, **job, "role": f"hipforge.execution.{job['role']}"}
        # GPU runtimes reserve huge address ranges: there only the resident set is limited (watched)
        job["address_limit_mb"] = 0 if cfg.backend in GPU_BACKENDS else job["rss_limit_mb"]
        party = Party(server.open(job), name, deadline=time.monotonic() + cfg.compile_timeout_s)
        parties.append(party)
        return party

    def gate(self, server: Server, result: EvalResult) -> None:
        """The gfx950 gate, unless its verdict on this source is cached: in a job of its own."""
        known = self.gate_known
        if known is None:
            with self.side_job(server, "build_job:gate", candidate_source=self.candidate) as party:
                known = party.expect("gate")
        cached = "" if self.gate_known is None else "(gate verdict cached by content)\n"
        result.gate_log = cached + (known.get("log") or "")
        result.gate_ok = known["ok"]
        if known["ok"] is False:
            raise conclude(Verdict.COMPILE_ERROR, f"the {known.get('arch', 'gfx950')} compile gate rejects the HIP "
                                                  f"source", phase="gate")

    def import_candidate(self, cand: Party, done: str) -> dict[str, Any]:
        """Import the candidate (and build ModelNew); each build it asks for runs in a build job."""
        while (event := cand.session.next(cand.deadline)) and event.get("event") == "build":
            cand.session.send(self.build(event))
        return cand.interpret(event, done)

    def prebuild(self, server: Server) -> None:
        """On GPUs the candidate's builds are made before device memory is held (prebuild_job.py), once per
        source: a marker in the cache says they are there."""
        cfg = self.cfg
        wanted = cfg.prebuild if cfg.prebuild is not None else cfg.backend in GPU_BACKENDS
        digest = hashlib.sha256(f"{cfg.backend}\0{cfg.arch}\0{self.candidate}".encode()).hexdigest()
        marker = Path(cfg.cache_dir) / "prebuilt" / digest
        if not wanted or marker.exists():
            return
        parties: list[Party] = []
        try:
            party = self.open(server, "candidate", parties, role="prebuild_job:run", candidate_source=self.candidate,
                              record_writes=True, rss_limit_mb=cfg.memory_limit_mb, env={CANARY: self.canary})
            self.prebuilt = self.import_candidate(party, "imported")["builds"]
        finally:
            self.escapes = self.finish(parties).get("candidate", {}).get("writes") or []
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()

    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.pool.server() as server, self.side_job(server, "build_job:build", args=request["args"],
                                                         kwargs=request["kwargs"]) as party:
            built = party.expect("built")
        return {"op": "built", **{k: built.get(k) for k in ("ok", "message", "log")}}

    @contextmanager
    def side_job(self, server: Server, role: str, **job: Any) -> Iterator[Party]:
        """A job that runs no candidate code, with the build cache writable; what it adds is sealed after."""
        parties: list[Party] = []
        with quiet.building():  # every backend: a timed phase that asks for the cores waits for it
            try:
                yield self.open(server, role.split(":")[1], parties, role=role, cache_writable=True,
                                record_writes=True, rss_limit_mb=self.cfg.reference_memory_limit_mb, **job)
            finally:
                self.finish(parties)
                seal(Path(self.cfg.cache_dir))

    def finish(self, parties: list[Party]) -> dict[str, dict[str, Any]]:
        """Quit every job and collect its exit (with the writes and processes its recorder refused). A job
        that does not quit in time is killed, so that its server still reports its exit; only a server that
        does not report it either is taken down, and that job's exit is then {} (unread)."""
        exits: dict[str, dict[str, Any]] = {}
        for party in parties:
            if party.session.exit is None and not party.stuck:
                party.session.send({"op": "quit"})
                party.session.wait_exit(EXIT_WAIT_S)
            if party.session.exit is None:  # the server reaps it and reports its exit at once
                party.session.server.kill_job()
            exit_ = party.session.wait_exit(EXIT_WAIT_S)
            if exit_ is None:
                party.session.server.kill()
            exits[party.name] = exit_ or {}
        parties.clear()
        return exits
