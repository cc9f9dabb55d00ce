"""Observations inside the candidate's process, armed only while candidate code runs.

``Guard`` is an audit hook plus a recording ``os.environ``: it blocks and records writes outside the work
dir, network use, process spawning, heap/frame introspection and secret reads made through Python. The
other helpers look at what ``forward`` returned and whether the extension is called. All of it runs where
the candidate runs, so it can only incriminate: the verdict's real checks are made outside the process.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hipforge.execution.antihack_static import SECRET_NAME, TIMING_NAMES

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


def watched_objects() -> dict[str, Any]:
    import time

    import torch
    import torch.nn.functional as F

    return {"time": time, "torch": torch, "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
            "torch.Tensor": torch.Tensor, "torch._C.TensorBase": torch._C.TensorBase,
            "torch.nn.functional": F, "torch.nn.Module": torch.nn.Module}


def evaluator_objects() -> dict[str, Any]:
    """The evaluator's own modules loaded in this process (the harness, the checks, the sandbox's client side)
    and the classes they define."""
    modules = {name: module for name, module in list(sys.modules.items())
               if module is not None and name.split(".")[0] == "hipforge"}
    classes = {f"{name}.{attr}": value for name, module in modules.items()
               for attr, value in list(vars(module).items())
               if isinstance(value, type) and getattr(value, "__module__", None) == name}
    return {**modules, **classes}


def snapshot() -> dict[tuple[str, str], int]:
    """Identity of every callable the evaluator or the reference might use, and of every function, class and
    module the evaluator's own modules and classes hold (a clock or a comparison rebound there changes what
    they do)."""
    found = {(label, name): id(value) for label, obj in watched_objects().items()
             for name, value in list(vars(obj).items()) if callable(value)}
    found.update({(label, name): id(value) for label, obj in evaluator_objects().items()
                  for name, value in list(vars(obj).items())
                  if callable(value) or isinstance(value, types.ModuleType | staticmethod | classmethod | property)})
    return found


def patched(before: dict[tuple[str, str], int]) -> tuple[str, str] | None:
    """(check, message) if the candidate replaced one of the snapshotted callables."""
    objects = {**watched_objects(), **evaluator_objects()}
    changed = [f"{label}.{name}" for (label, name), ident in before.items()
               if label not in objects or id(vars(objects[label]).get(name)) != ident]
    if not changed:
        return None
    ours = [c for c in changed if c.split(".")[0] == "hipforge"]
    if ours:
        return "judge_patch", f"rebound the evaluator's own {', '.join(ours[:3])}"
    timing = [c for c in changed
              if c.startswith(("time.", "torch.cuda.Event.")) or c.split(".")[-1] in TIMING_NAMES]
    if timing:
        return "timing_patch", f"replaced {', '.join(timing[:3])}"
    return "torch_patch", f"replaced {', '.join(changed[:3])}"


def lazy_output(outputs: list[Any]) -> str | None:
    import torch

    for out in outputs:
        if type(out) is not torch.Tensor:
            kind = f"{type(out).__module__}.{type(out).__qualname__}"
            return f"forward returned {kind}, not a plain torch.Tensor"
    if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
        return "a torch function/dispatch mode is left active after forward"
    return None


def same_storage(a: Any, b: Any) -> bool:
    storage = a.untyped_storage()
    return storage.data_ptr() == b.untyped_storage().data_ptr() and storage.nbytes() > 0


class Extensions:
    """Counts calls into the candidate's extension modules; in poison mode their results become noise."""

    def __init__(self) -> None:
        self.modules: list[str] = []
        self.calls = 0
        self.poison = False

    def wrap(self, module: types.ModuleType) -> types.ModuleType:
        proxy = types.ModuleType(getattr(module, "__name__", "extension"))
        self.modules.append(proxy.__name__)
        for name in dir(module):
            value = getattr(module, name)
            public = callable(value) and not name.startswith("_")
            setattr(proxy, name, self._wrap(value) if public else value)
        return proxy

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if not self.poison:
                return fn(*args, **kwargs)
            import torch

            copies = [(a, a.clone()) for a in args if isinstance(a, torch.Tensor)]
            out = fn(*args, **kwargs)
            for arg, copy in copies:  # an output written into an argument is poisoned in place
                if not torch.equal(arg, copy):
                    _poison_(arg)
            return _poisoned(out)

        call.__name__ = call.__qualname__ = getattr(fn, "__name__", "extension_function")
        call.__doc__ = fn.__doc__
        return call


def _poison_(t: Any) -> None:
    import torch

    if t.is_floating_point() or t.is_complex():
        # random finite values, not NaN: ``torch_result + 0 * kernel_result`` keeps a NaN's trace but not these
        t.copy_(torch.randn_like(t) * 1e3 + 7.0)
    elif t.dtype == torch.bool:
        t.logical_not_()
    else:
        t.fill_(-12345 if t.dtype.is_signed else 123)


def _poisoned(out: Any) -> Any:
    import torch

    if isinstance(out, torch.Tensor):
        poisoned = out.clone()
        _poison_(poisoned)
        return poisoned
    if isinstance(out, tuple | list):
        return type(out)(_poisoned(x) for x in out)
    return out


def identical(a: Any, b: Any) -> bool:
    import torch

    if torch.equal(a, b):
        return True
    return a.is_floating_point() and torch.allclose(a, b, 0.0, 0.0, equal_nan=True)
