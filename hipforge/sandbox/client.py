"""The caller's side of the sandbox: a warm fork server, and a session per job on it.

The server (``python -m hipforge.sandbox.server``) imports torch once. With root and a working ``unshare``
it lives in its own network and PID namespaces (no network at all; when it dies, every process it ever
started dies too). Each job forks a child that enters ``enter_isolation`` and runs the job's role; the
caller talks to it through a ``Session``: messages in, nonce-tagged events out, and the job's processes
watched from outside (threads, exit, memory, writes the recorder refused).
"""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from hipforge.sandbox.env import scrubbed_env
from hipforge.sandbox.server import child_pids

NAMESPACES = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
START_TIMEOUT_S = 300.0  # importing torch on a loaded 2-core machine can be slow
TAIL_BYTES = 6000
EOF_EVENT: dict[str, Any] = {"event": "exit", "lost": True}  # the server died: no exit status


@functools.cache
def namespaces_available() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run([*NAMESPACES, "true"], capture_output=True, timeout=60).returncode == 0


def resolve_mode(requested: str) -> str:
    if requested == "auto":
        return "namespaces" if namespaces_available() else "rlimits"
    if requested == "namespaces" and not namespaces_available():
        raise RuntimeError("namespaces need root and a working `unshare`")
    if requested not in ("namespaces", "rlimits"):
        raise ValueError(f"isolation must be auto, namespaces or rlimits, not {requested!r}")
    return requested


class Server:
    """One warm fork server; one job (session) at a time."""

    def __init__(self, mode: str, preload: Sequence[str] = ()) -> None:
        self.mode = mode
        self.root = tempfile.mkdtemp(prefix="hipforge-sandbox-")  # holds the jobs' dirs
        os.chmod(self.root, 0o711)  # the sandbox user may pass through to its own dirs, not list
        read_fd, write_fd = os.pipe()
        prefix = NAMESPACES if mode == "namespaces" else []
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "hipforge.sandbox.server", str(write_fd), self.root, ",".join(preload)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            env=scrubbed_env(), cwd="/", start_new_session=True)
        os.close(write_fd)
        self._events, self._buffer, self._output = read_fd, b"", bytearray()
        threading.Thread(target=self._drain, daemon=True).start()
        up = self._next(time.monotonic() + START_TIMEOUT_S)
        if up is None or up is EOF_EVENT or up.get("event") != "up":
            self.kill()
            raise RuntimeError(f"the sandbox server did not start: {self._output.decode(errors='replace')}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def open(self, job: dict[str, Any], timeout_s: float = 60.0) -> Session:
        """Start a job; returns once the server has made its directories."""
        self._output.clear()
        session = Session(self, job["nonce"])
        session.send(job)
        first = session.next(time.monotonic() + timeout_s)
        if not first or first.get("event") != "job":
            self.kill()
            raise RuntimeError(f"the sandbox server did not take the job: {self.tail()}")
        session.outdir = first["outdir"]
        return session

    def job_pids(self) -> list[int]:
        """Host pids of the running job's fork and everything below it."""
        server = child_pids(self.proc.pid) if self.mode == "namespaces" else [self.proc.pid]
        found, todo = [], [c for s in server for c in child_pids(s)]
        while todo:
            pid = todo.pop()
            found.append(pid)
            try:
                todo += child_pids(pid)
            except OSError:
                pass
        return found

    def kill_job(self) -> None:
        """Kill the running job's processes; the server reaps them, reports the exit and stays warm."""
        for pid in self.job_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def threads(self) -> dict[int, tuple[str, str]]:
        """Every OS thread (task) of the running job's processes, counted from outside: tid -> its
        scheduler state (R running or runnable, S sleeping, D in the kernel, Z/X exiting) and its name."""
        states: dict[int, tuple[str, str]] = {}
        for pid in self.job_pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        stat = f.read()
                    name, rest = stat.split("(", 1)[1].rsplit(")", 1)
                    states[int(tid)] = (rest.split()[0], name)
                except (OSError, IndexError):
                    pass  # gone since the listing
        return states

    def _send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def tail(self) -> str:
        return bytes(self._output[-TAIL_BYTES:]).decode(errors="replace")

    def kill(self) -> None:
        """Kill the whole session; in namespace mode that takes down the PID namespace too, and we
        wait until its init (the server) is gone: the kernel reaps the namespace before it."""
        inits = child_pids(self.proc.pid) if self.mode == "namespaces" and self.alive() else []
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        if self._events >= 0:
            os.close(self._events)
            self._events = -1
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{pid}") for pid in inits) and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        while chunk := self.proc.stdout.read1(1 << 16):
            self._output += chunk
            del self._output[:-2 * TAIL_BYTES]

    def _next(self, deadline: float) -> dict[str, Any] | None:
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if self._events < 0 or left <= 0 or not select.select([self._events], [], [], left)[0]:
                return None
            chunk = os.read(self._events, 1 << 16)
            if not chunk:
                return EOF_EVENT
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            event = json.loads(line) if line.strip() else {}
        except ValueError:
            return {}
        return event if isinstance(event, dict) else {}


class Session:
    """One job on a server: ``send`` messages, ``next`` events; ``exit`` is set once the job is gone."""

    def __init__(self, server: Server, nonce: str) -> None:
        self.server, self.nonce = server, nonce
        self.outdir = ""
        self.exit: dict[str, Any] | None = None

    def send(self, message: dict[str, Any]) -> bool:
        """False when the job (or its server) is gone."""
        try:
            self.server._send(json.dumps(message).encode() + b"\n")
            return True
        except (BrokenPipeError, ValueError):
            return False

    def next(self, deadline: float) -> dict[str, Any] | None:
        """The job's next event (None: the deadline passed first). Lines without the nonce are forgeries."""
        while True:
            event = self.server._next(deadline)
            if event is None:
                return None
            if event is EOF_EVENT:
                self.exit = event
                return event
            if event.get("nonce") != self.nonce:
                continue
            if event.get("event") == "exit":
                self.exit = event
            return event

    def wait_exit(self, timeout_s: float) -> dict[str, Any] | None:
        """Drain events until the job's exit (None: it did not exit in time)."""
        deadline = time.monotonic() + timeout_s
        while self.exit is None:
            if self.next(deadline) is None:
                return None
        return self.exit
