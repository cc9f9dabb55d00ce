"""Process isolation: a warm fork server per slot; every evaluation runs in a fresh fork of it.

The server (``python -m hipforge.execution.fork_server``) imports torch once. With root and a working
``unshare`` it lives in its own network and PID namespaces (no network at all; when it dies, every
process it ever started dies too). Each job forks a child that enters ``enter_isolation`` and then
runs ``worker.run_job``. Without namespaces the worker's audit hook is the network guard and
rlimits do the rest; ``isolation`` in every result says which mechanisms were in force.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from hipforge.execution.fork_server import child_pids
from hipforge.execution.isolation import PROJECT_ROOT

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
NAMESPACES = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
START_TIMEOUT_S = 300.0  # importing torch on a loaded 2-core machine can be slow
CLEANUP_S = 60.0  # between a job's result and the server's report that its processes are gone
TAIL_BYTES = 6000
_EOF: dict[str, Any] = {}  # the server's events pipe closed (compared by identity: nothing can forge it)


def scrubbed_env() -> dict[str, str]:
    """The caller's environment minus anything that looks like a credential."""
    env = {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in SECRET_MARKERS)}
    return {**env, "PYTHONPATH": PROJECT_ROOT, "PYTHONDONTWRITEBYTECODE": "1"}


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


@dataclass
class Outcome:
    result: dict[str, Any] | None  # what the worker reported (None: it never did)
    exit: dict[str, Any] | None  # {"code": n} | {"signal": "SIGSEGV"}, "memory": bool; None: killed by us
    phase: str
    timed_out: bool
    output_tail: str


class Server:
    """One warm fork server; ``run`` is one job at a time."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.root = tempfile.mkdtemp(prefix="hipforge-sandbox-")  # holds the jobs' work dirs
        os.chmod(self.root, 0o711)  # the sandbox user may pass through to its own work dir, not list
        read_fd, write_fd = os.pipe()
        prefix = NAMESPACES if mode == "namespaces" else []
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "hipforge.execution.fork_server", str(write_fd), self.root],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            env=scrubbed_env(), cwd="/", start_new_session=True)
        os.close(write_fd)
        self._events, self._buffer, self._output = read_fd, b"", bytearray()
        threading.Thread(target=self._drain, daemon=True).start()
        up = self._next(time.monotonic() + START_TIMEOUT_S)
        if up is None or up is _EOF or up.get("event") != "up":
            self.kill()
            raise RuntimeError(f"the sandbox server did not start: {self._output.decode(errors='replace')}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, job: dict[str, Any], run_lock: threading.Lock) -> Outcome:
        """Send a job, apply the compile and run deadlines, hold ``run_lock`` while it is timed."""
        self._output.clear()
        phase, deadline = "compile", time.monotonic() + job["compile_timeout_s"]
        result, held = None, False
        try:
            self._send(json.dumps(job).encode() + b"\n")
            while True:
                event = self._next(deadline)
                if event is None or event is _EOF:
                    self.kill()
                    return Outcome(result, None, phase, event is None, self.tail())
                if event.get("nonce") != job["nonce"]:
                    continue  # a line the candidate forged: it cannot know the nonce
                kind = event["event"]
                if kind == "phase":
                    phase = event["phase"]
                elif kind == "ready":
                    run_lock.acquire()
                    held, phase = True, "check"
                    deadline = time.monotonic() + job["run_timeout_s"]
                    self._send(b"go\n")
                elif kind == "result":
                    result, deadline = event["data"], time.monotonic() + CLEANUP_S
                elif kind == "exit":
                    return Outcome(result, event, phase, False, self.tail())
        except BrokenPipeError:  # the server died between jobs
            self.kill()
            return Outcome(None, None, phase, False, self.tail())
        finally:
            if held:
                run_lock.release()

    def _send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def tail(self) -> str:
        return bytes(self._output[-TAIL_BYTES:]).decode(errors="replace")

    def kill(self) -> None:
        """Kill the whole session; in namespace mode that takes down the PID namespace too, and we
        wait until its init (the server) is gone: the kernel reaps the namespace before it."""
        inits = child_pids(self.proc.pid) if self.mode == "namespaces" else []
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
        import select

        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._events], [], [], left)[0]:
                return None
            chunk = os.read(self._events, 1 << 16)
            if not chunk:
                return _EOF
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        if not line.strip():
            return {}
        try:
            event = json.loads(line)
        except ValueError:
            return {}
        return event if isinstance(event, dict) else {}
