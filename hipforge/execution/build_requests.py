"""The builds one candidate's module asks for while it is imported: loaded from the read-only cache, or, when
missing, made by the parent in a build job that runs no candidate code and then loaded. Shared by the
prebuild job and the candidate's own job, so both stop at the same count."""

from __future__ import annotations

from typing import Any

from hipforge.execution.backend import CompileError
from hipforge.execution.compile_cache import BuildNeeded

MAX_BUILDS = 16  # build requests one candidate may make


class BuildRequests:
    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.names: list[str] = []  # what was asked for, in order

    def load(self, backend: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return backend.load_inline(*args, **kwargs)
        except BuildNeeded:
            self.names.append(build_name(args, kwargs))
            if len(self.names) > MAX_BUILDS:
                raise CompileError(f"more than {MAX_BUILDS} builds requested", "") from None
            self.request(args, kwargs)
            return backend.load_inline(*args, **kwargs)

    def request(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Ask the parent for the build; raise its failure here."""
        self.channel.emit({"event": "build", "args": list(args), "kwargs": kwargs})
        reply = self.channel.recv() or {}
        if not reply.get("ok"):
            raise CompileError(reply.get("message", "the build failed"), reply.get("log", ""))


def build_name(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    return str(kwargs.get("name", args[0] if args else "?"))
