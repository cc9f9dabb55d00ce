"""The sandbox's server process (``python -m hipforge.execution.fork_server``): it imports torch once,
then forks a child per job that enters isolation and runs the worker, waits for it under a memory
watch, and makes sure nothing the job started survives it. Events go to the client (sandbox.Server)
as JSON lines on an inherited pipe, each tagged with the job's nonce."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

from hipforge.execution.isolation import PR_SET_CHILD_SUBREAPER, enter_isolation, libc


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
    shutil.rmtree(job["workdir"], ignore_errors=True)


def child_pids(pid: int) -> list[int]:
    """Every direct child of `pid`, across its threads."""
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
