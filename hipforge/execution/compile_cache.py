"""A content-addressed build cache shared by every worker process on a machine.

Key = hash of the source, toolchain, arch and flags. Builds of different keys run in
parallel; two workers asking for the same key build it once (an exclusive file lock),
and a half-written build is never visible (build in a temp dir, then rename).
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


def cache_key(**parts: object) -> str:
    """Stable hash of everything that changes a build's output."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


class CompileCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()
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
