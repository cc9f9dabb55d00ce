"""Warm sandbox servers, borrowed one per job in flight; a dead one (timeouts kill theirs) is replaced."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hipforge.sandbox.client import Server


class ServerPool:
    def __init__(self, mode: str, preload: Sequence[str] = ()) -> None:
        self.mode, self.preload = mode, tuple(preload)
        self.idle: list[Server] = []
        self.lock = threading.Lock()

    @contextmanager
    def server(self) -> Iterator[Server]:
        with self.lock:
            server = self.idle.pop() if self.idle else None
        if server is None or not server.alive():
            server = Server(self.mode, self.preload)
        try:
            yield server
        finally:
            if server.alive():
                with self.lock:
                    self.idle.append(server)

    def close(self) -> None:
        with self.lock:
            servers, self.idle = self.idle, []
        for server in servers:
            server.kill()


_pools: dict[tuple[str, tuple[str, ...]], ServerPool] = {}
_guard = threading.Lock()


def pool_for(mode: str, preload: Sequence[str] = ()) -> ServerPool:
    """One pool per (isolation mode, preloaded modules) for the life of the process."""
    with _guard:
        return _pools.setdefault((mode, tuple(preload)), ServerPool(mode, preload))


@atexit.register
def shutdown() -> None:
    """Stop every warm sandbox server."""
    for pool in list(_pools.values()):
        pool.close()
