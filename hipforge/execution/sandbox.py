"""Process isolation: a warm fork server per slot; every evaluation runs in a fresh fork of it.

The server (``python -m hipforge.execution.sandbox``) imports torch once. With root and a working
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

from hipforge.execution.isolation import PR_SET_CHILD_SUBREAPER, PROJECT_ROOT, enter_isolation, libc

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
            [*prefix, sys.executable, "-m", "hipforge.execution.sandbox", str(write_fd), self.root],
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
        inits = _children(self.proc.pid) if self.mode == "namespaces" else []
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


# ---- below: the server process and its job children ----
def _read_line(fd: int) -> bytes:
    """One line from a pipe, byte by byte: the job's fork must find the rest (its "go") unread."""
    data = b""
    while not data.endswith(b"\n") and (chunk := os.read(fd, 1)):
        data += chunk
    return data


def _emit(fd: int, event: dict[str, Any], nonce: str = "") -> None:
    # the leading newline ends any partial line the candidate may have written to this fd
    data = memoryview(b"\n" + json.dumps({**event, "nonce": nonce}).encode() + b"\n")
    while data:
        data = data[os.write(fd, data):]


def _wait_watched(pid: int, rss_limit_mb: int) -> dict[str, Any]:
    """Wait for the job's fork; kill it if its resident set passes the limit (GPU jobs have no RLIMIT_AS)."""
    import select

    pidfd, memory = os.pidfd_open(pid), False
    while not select.select([pidfd], [], [], 0.1)[0]:
        if not memory and _rss_mb(pid) > rss_limit_mb:
            memory = True
            os.kill(pid, signal.SIGKILL)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"signal": signal.Signals(os.WTERMSIG(status)).name, "memory": memory}
    return {"code": os.WEXITSTATUS(status), "memory": memory}


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024
    except (OSError, StopIteration):
        return 0.0


def _cleanup(job: dict[str, Any], pid: int) -> None:
    """Nothing the job started may outlive it: its process group, then (namespaces) every process of
    its uid, then whatever was re-parented to us (we are PID 1 or a child subreaper)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if job["mode"] == "namespaces":
        killer = os.fork()
        if killer == 0:
            try:
                os.setuid(job["uid"])
                os.kill(-1, signal.SIGKILL)  # as that uid, -1 means every process of that uid
            finally:
                os._exit(0)
        os.waitpid(killer, 0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for child in _children(os.getpid()):
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            break
        time.sleep(0.02)
    shutil.rmtree(job["workdir"], ignore_errors=True)


def _children(pid: int) -> list[int]:
    pids: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def serve(events_fd: int, root: str) -> None:
    """The server loop: fork a child per job, wait for it, then make sure nothing of it survives."""
    import torch  # noqa: F401  # paid once; every job's fork inherits it

    from hipforge.execution import worker

    libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a job come back to us for cleanup
    os.write(events_fd, b'{"event": "up"}\n')
    while line := _read_line(0):
        job = json.loads(line)
        job["workdir"] = tempfile.mkdtemp(prefix="job-", dir=root)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                mechanisms = enter_isolation(job)
                emit = functools.partial(_emit, events_fd, nonce=job["nonce"])
                worker.run_job(job, mechanisms, emit, functools.partial(_read_line, 0))
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        status = _wait_watched(pid, job["rss_limit_mb"])
        _cleanup(job, pid)
        _emit(events_fd, {"event": "exit", **status}, job["nonce"])


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
