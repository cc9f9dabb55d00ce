"""The sandbox's server process (``python -m hipforge.sandbox.server``): it imports torch and the role
modules once, then forks a child per job that enters isolation and runs the job's role, waits for it
under a memory watch (and, for jobs that ask, answers its write recorder, which also refuses the processes
of a job without them), and makes sure nothing the job started survives it. Events go to the client
(client.Server) as JSON lines on an inherited pipe, each tagged with the job's nonce; the job reads the
client's messages from the server's stdin."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hipforge.sandbox import seccomp
from hipforge.sandbox.isolation import PR_SET_CHILD_SUBREAPER, enter_isolation, libc, writable_dirs


@dataclass(frozen=True)
class Channel:
    """A job's line to its client: ``emit`` an event, ``recv`` the client's next message (None: gone)."""

    events_fd: int
    nonce: str

    def emit(self, event: dict[str, Any]) -> None:
        _emit(self.events_fd, event, self.nonce)

    def recv(self) -> dict[str, Any] | None:
        line = _read_line(0)
        return json.loads(line) if line.strip() else None


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
        for child in child_pids(os.getpid()):
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


def child_pids(pid: int) -> list[int]:
    """Every direct child of `pid`, across its threads (from /proc/*/stat where the kernel, gVisor's say,
    has no task/*/children files)."""
    pids: list[int] = []
    tids = os.listdir(f"/proc/{pid}/task")
    if not os.path.exists(f"/proc/{pid}/task/{tids[0]}/children"):
        return [int(p) for p in filter(str.isdigit, os.listdir("/proc")) if _parent(int(p)) == pid]
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def serve(events_fd: int, root: str, preload: list[str]) -> None:
    """The server loop: fork a child per job, wait for it, then make sure nothing of it survives."""
    import torch  # noqa: F401  # paid once; every job's fork inherits it

    for name in preload:  # a role module may pay its own set-up here, once (``preload()``)
        module = importlib.import_module(name)
        if callable(getattr(module, "preload", None)):
            module.preload()
    libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a job come back to us for cleanup
    os.write(events_fd, b'{"event": "up"}\n')
    while line := _read_line(0):
        job = json.loads(line)
        if not isinstance(job, dict) or "role" not in job:
            continue  # a message meant for a job that has already exited
        jobdir = tempfile.mkdtemp(prefix="job-", dir=root)
        os.chmod(jobdir, 0o711)  # the job's uid passes through to its own dirs
        job["workdir"], job["outdir"] = os.path.join(jobdir, "work"), os.path.join(jobdir, "out")
        os.mkdir(job["workdir"])
        os.mkdir(job["outdir"], 0o700)
        _emit(events_fd, {"event": "job", "outdir": job["outdir"]}, job["nonce"])
        record = bool(job.get("record_writes") or job.get("no_processes")) and seccomp.supported()
        ours, theirs = socket.socketpair() if record else (None, None)
        pid = os.fork()
        if pid == 0:
            _child(job, events_fd, theirs)
        if theirs is not None:
            theirs.close()  # a job that dies before it answers then reads as "no recorder"
        recorder = seccomp.Recorder.receive(ours, writable_dirs(job), _spawned(events_fd, job)) if ours else None
        status = _wait_watched(pid, job["rss_limit_mb"])
        _cleanup(job, pid)
        writes = recorder.finish() if recorder else []
        spawns = recorder.spawns if recorder else []
        shutil.rmtree(jobdir, ignore_errors=True)
        _emit(events_fd, {"event": "exit", **status, "writes": writes, "spawns": spawns,
                          "recorded": recorder is not None}, job["nonce"])


def _spawned(events_fd: int, job: dict[str, Any]) -> Callable[[str], None]:
    """A job without processes that tried to start one is told to its client at once, as the verdict, in
    the job's own event stream (before the refused syscall returns, so before anything the job says after)."""
    def tell(what: str) -> None:
        _emit(events_fd, {"event": "failed", "verdict": "hacked", "hack_check": "process_spawn",
                          "message": f"tried to start a process (refused by the sandbox): {what}"}, job["nonce"])

    return tell


def _child(job: dict[str, Any], events_fd: int, recorder: socket.socket | None) -> None:
    """The job's fork: isolation, the write recorder, then the role; never returns."""
    code = 1
    try:
        mechanisms = enter_isolation(job)
        if recorder is not None:
            if seccomp.offer(recorder, no_processes=bool(job.get("no_processes"))):
                mechanisms += ["write-recorder"] + (["no-processes"] if job.get("no_processes") else [])
            recorder.close()
        module, _, name = job["role"].partition(":")
        getattr(importlib.import_module(module), name)(job, mechanisms, Channel(events_fd, job["nonce"]))
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], [m for m in sys.argv[3].split(",") if m])
