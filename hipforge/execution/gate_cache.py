"""The gfx950 gate's verdicts by content: the same HIP source under the same gate is compiled once.

The evaluating process keeps it (the sandbox only reads what it is handed), keyed by the candidate's own
source, the arch and a stamp of the gate's code and headers, so a changed gate never reuses old verdicts.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any


@cache
def _stamp() -> str:
    import torch

    from hipforge.execution import gate
    from hipforge.execution.cuda import prelude

    digest = hashlib.sha256(torch.__version__.encode())  # torch's own headers change with its version
    for module in (gate, prelude):
        digest.update(Path(module.__file__).read_bytes())
    for header in sorted(Path(prelude.LITE_DIR).rglob("*")):  # our headers the gate compiles against
        if header.is_file():
            digest.update(header.read_bytes())
    return digest.hexdigest()


class GateCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def key(self, candidate_source: str, arch: str) -> str:
        return hashlib.sha256(f"{_stamp()}\0{arch}\0{candidate_source}".encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.root / f"{key}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def put(self, key: str, ok: bool, log: str) -> None:
        self.root.mkdir(mode=0o755, parents=True, exist_ok=True)
        tmp = self.root / f"{key}.{os.getpid()}.tmp"  # concurrent writers: the last rename wins, none is torn
        tmp.write_text(json.dumps({"ok": ok, "log": log}))
        tmp.replace(self.root / f"{key}.json")
