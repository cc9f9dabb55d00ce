"""The guard inside the candidate's process, armed only while candidate code runs: an audit hook plus a
recording ``os.environ``. It blocks and records writes outside the work dir, network use, process spawning,
heap/frame introspection and secret reads made through Python, and trips on the reference Model built or run
by the candidate. It runs where the candidate runs, so it can only incriminate: the verdict's real checks are
made outside the process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hipforge.execution.antihack_static import SECRET_NAME

CANARY = "HIPFORGE_CANARY_TOKEN"  # planted in the sandbox env: dumping the environment reads it
PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                  "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg"}
NETWORK_EVENTS = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
                  "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo"}
HEAP_EVENTS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames"}
FS_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate",
             "os.symlink", "os.link", "shutil.rmtree", "shutil.copyfile", "shutil.move", "os.utime"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class Guard:
    def __init__(self, workdir: str, candidate_file: str) -> None:
        self.workdir = os.path.realpath(workdir)
        self.candidate_file = candidate_file
        self.active = False
        self.violations: list[tuple[str, str]] = []
        self._inside = False

    def install(self) -> None:
        sys.addaudithook(self._hook)
        guard = self  # held in a closure: no attribute of os.environ leads back to the guard

        class RecordingEnviron(os._Environ):  # type: ignore[misc, type-arg]
            def __getitem__(self, key: str) -> str:
                if guard.active and not guard._inside and SECRET_NAME.search(str(key)):
                    guard.record("secret_access", f"reads the environment variable {key}")
                return super().__getitem__(key)

        os.environ.__class__ = RecordingEnviron

    @contextmanager
    def armed(self, on: bool = True) -> Iterator[None]:
        """Arm (or, inside the candidate, disarm for our own work such as a backend build)."""
        previous, self.active = self.active, on
        try:
            yield
        finally:
            self.active = previous

    def record(self, check: str, message: str) -> None:
        if (check, message) not in self.violations:
            self.violations.append((check, message))

    def _deny(self, check: str, message: str) -> None:
        self.record(check, message)
        raise PermissionError(f"hipforge sandbox: {message}")

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or self._inside:
            return
        self._inside = True  # the checks below may raise events themselves
        try:
            self._check(event, args)
        finally:
            self._inside = False

    def _check(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not isinstance(path, str):
                return
            if path.startswith("/proc/") and path.endswith("environ"):
                self._deny("secret_access", f"reads {path}")
            writing = any(c in (mode or "") for c in "wax+") or (mode is None and flags & WRITE_FLAGS)
            if writing and not self._inside_workdir(path):
                self._deny("file_write", f"writes {path} outside its work dir")
        elif event in FS_EVENTS and args and isinstance(args[0], str | bytes):
            if not self._inside_workdir(args[0]):
                self._deny("file_write", f"{event} {os.fsdecode(args[0])} outside its work dir")
        elif event in PROCESS_EVENTS:
            self._deny("process_spawn", f"starts or signals a process ({event})")
        elif event in NETWORK_EVENTS:
            self._deny("network", f"uses the network ({event} {args[1:2]})")
        elif event in HEAP_EVENTS:
            self._deny("reference_access", f"searches the interpreter heap ({event})")
        elif event in ("sys._getframe", "object.__getattr__") and self._from_candidate():
            if event == "sys._getframe" or args[1] in ("tb_frame", "gi_frame", "cr_frame", "f_back"):
                self._deny("reference_access", "walks the evaluator's stack frames")

    def _inside_workdir(self, path: str | bytes) -> bool:
        real = os.path.realpath(os.fsdecode(path))
        return real == "/dev/null" or real == self.workdir or real.startswith(self.workdir + os.sep)

    def _from_candidate(self) -> bool:
        """Did candidate code raise this event, itself or through inspect/traceback helpers?"""
        frame = sys._getframe(3)  # _from_candidate <- _check <- _hook <- the code that raised the event
        helpers = ("inspect.py", "traceback.py")
        while frame is not None and os.path.basename(frame.f_code.co_filename) in helpers:
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename == self.candidate_file


def tripwire(model_cls: type, guard: Guard) -> None:
    """Make the reference Model refuse to be built or run while candidate code is running."""
    for name in ("__init__", "forward"):
        original = getattr(model_cls, name)

        def wrapped(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            if guard.active:
                guard._deny("code_bypass", "the candidate builds or runs the reference Model")
            return _original(self, *args, **kwargs)

        setattr(model_cls, name, wrapped)
