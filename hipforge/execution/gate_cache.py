"""The gfx950 gate's verdicts by content: the same HIP source under the same gate is compiled once.

The evaluating process keeps it (the sandbox only reads what it is handed), keyed by the candidate's own
source, the arch and a stamp of the gate's code and headers, so a changed gate never reuses old verdicts.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from hipforge.execution.json_cache import JsonCache


@cache
def _stamp() -> str:
    import torch

    from hipforge.execution import gate, gate_pch
    from hipforge.execution.cuda import prelude

    digest = hashlib.sha256(torch.__version__.encode())  # torch's own headers change with its version
    for module in (gate, gate_pch, prelude):
        digest.update(Path(module.__file__).read_bytes())
    for header in sorted(Path(prelude.LITE_DIR).rglob("*")):  # our headers the gate compiles against
        if header.is_file():
            digest.update(header.read_bytes())
    return digest.hexdigest()


class GateCache(JsonCache):
    def key(self, candidate_source: str, arch: str) -> str:
        return hashlib.sha256(f"{_stamp()}\0{arch}\0{candidate_source}".encode()).hexdigest()

    def put(self, key: str, ok: bool, log: str) -> None:
        self.write(key, {"ok": ok, "log": log})
