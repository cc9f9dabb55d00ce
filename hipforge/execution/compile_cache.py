"""A content-addressed build cache shared by every worker process on a machine.

Key = hash of the source, toolchain, arch and flags. Builds of different keys run in
parallel; two workers asking for the same key build it once (an exclusive file lock),
and a half-written build is never visible (build in a temp dir, then rename).

Where candidate code runs, the cache is read-only (HIPFORGE_COMPILE_CACHE_READONLY, and a read-only
mount in the sandbox): a miss raises ``BuildNeeded`` and the evaluator builds it in a job of its own
that runs no candidate code; ``seal`` then hands every finished entry to root, read-only, so no later
job can change what an entry holds.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def default_root() -> Path:
    """Read at construction, not import: the sandbox sets HIPFORGE_COMPILE_CACHE per job."""
    return Path(os.environ.get("HIPFORGE_COMPILE_CACHE", Path.home() / ".cache" / "hipforge" / "compile"))


class BuildNeeded(Exception):
    """A read-only cache lacks an entry: the caller must have it built elsewhere."""

    def __init__(self, key: str) -> None:
        super().__init__(f"build cache entry {key} is missing and this process may not build")
        self.key = key


def read_only() -> bool:
    return os.environ.get("HIPFORGE_COMPILE_CACHE_READONLY") == "1"


def seal(root: Path) -> int:
    """Make finished entries root's and read-only (root only; temp dirs and locks are left alone)."""
    if os.geteuid() != 0 or not root.is_dir():
        return 0
    sealed = 0
    for entry in root.iterdir():
        if entry.name.startswith(".") or entry.suffix == ".lock" or entry.stat().st_uid == 0:
            continue
        for path in [entry, *entry.rglob("*")]:
            if not path.is_symlink():
                os.chown(path, 0, 0)
                os.chmod(path, 0o555 if path.is_dir() or path.stat().st_mode & 0o111 else 0o444)
        sealed += 1
    return sealed


def cache_key(**parts: object) -> str:
    """Stable hash of everything that changes a build's output."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


class CompileCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()
        if not self.root.is_dir():
            self.root.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.root / key

    def get_or_build(self, key: str, build: Callable[[Path], None]) -> tuple[Path, bool]:
        """Return (directory holding the build, whether it was a cache hit).

        ``build(tmpdir)`` writes its outputs into tmpdir; an exception leaves no entry.
        """
        final = self.path(key)
        if final.exists():
            return final, True
        if read_only():
            raise BuildNeeded(key)
        with open(self.root / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if final.exists():  # another worker finished it while we waited
                return final, True
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=self.root))
            try:
                build(tmp)
                os.rename(tmp, final)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return final, False
