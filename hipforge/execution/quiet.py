"""On the cpu backend the kernels run on the same cores as the builds: a timed phase that shares them with a
compiler measures the scheduler, not the kernel (and the parent's clock then contradicts an honest kernel's
own times). Builds hold the cores shared; a timed phase holds them alone, and builds that arrive while it
waits queue behind it. flock locks, so this holds across the threads and the processes of one machine.

On GPU machines (and cpu-backend machines of many cores) holding every build back for each timed phase would
serialize the evaluations in flight; there only a batch of timed trials taken again (the parent's clock
contradicted the first) waits for the cores, so that an honest kernel held back by builds is timed quietly."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path


def _lock_dir() -> Path:
    # private to this user: a sandboxed job (another uid) cannot open, and so cannot hold, these locks
    path = Path(tempfile.gettempdir()) / f"hipforge-locks-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


@contextmanager
def _flock(name: str, mode: int) -> Iterator[None]:
    fd = os.open(_lock_dir() / name, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def building() -> Iterator[None]:
    """A build: shares the cores with other builds, never with a timed phase."""
    with _flock("turnstile", fcntl.LOCK_EX):  # waits while a timed phase waits or runs
        pass
    with _flock("cores", fcntl.LOCK_SH):
        yield


@contextmanager
def timing(enabled: bool) -> Iterator[None]:
    """A timed phase: the cores alone, once the builds already running have finished."""
    if not enabled:
        yield
        return
    with _flock("turnstile", fcntl.LOCK_EX), _flock("cores", fcntl.LOCK_EX):
        yield


# up to this many cores, a cpu-backend timed phase holds them all: builds would take every one of them. On more
# cores, builds run at niceness 19 beside it (each timed phase waiting for the builds in flight would let one
# evaluation through per compile: 16 slots would verify no faster than two)
QUIET_CORES = 4


def phases(backend: str, cores: int | None = None) -> tuple[bool, Callable[[], AbstractContextManager[None]]]:
    """(whether every timed phase holds the cores alone, what a batch of timed trials taken again holds)."""
    alone = backend == "cpu" and (cores or os.cpu_count() or 1) <= QUIET_CORES
    return alone, (nullcontext if alone else partial(timing, True))  # an alone phase already holds them
