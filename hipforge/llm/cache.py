"""On-disk response cache: one JSON file per (provider, model, turns, parameters) key.

A directory of files rather than a DuckDB table because DuckDB admits one writing process at a
time: agents running in parallel Dagster run workers would fight over the warehouse lock on every
lookup, while an atomic rename of a content-addressed file needs no lock at all. The files are
also plain enough to ship as a replay fixture (CI, a colleague re-running a report).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hipforge.llm.request import LLMRequest

CacheMode = Literal["read_write", "replay", "off"]
MODES: tuple[str, ...] = ("read_write", "replay", "off")


def default_cache_dir() -> Path:
    """HIPFORGE_LLM_CACHE overrides the embedded default beside the warehouse file."""
    configured = os.environ.get("HIPFORGE_LLM_CACHE")
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / "warehouse" / "llm_cache"


def cache_key(provider: str, model: str, request: LLMRequest) -> str:
    """sha256 of the canonical JSON of everything that shapes the answer."""
    payload = {
        "provider": provider,
        "model": model,
        "turns": [[t.role, t.content] for t in request.turns()],
        "params": request.params(),
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class ResponseCache:
    directory: Path
    mode: CacheMode = "read_write"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"cache mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        self.directory = Path(self.directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"  # fan out: no directory of 100K files

    def get(self, key: str) -> dict[str, Any] | None:
        if self.mode == "off":
            return None
        try:
            return json.loads(self._path(key).read_text())
        except FileNotFoundError:
            return None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if self.mode != "read_write":
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write aside, then rename: readers in other processes see the old file or the whole new one.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(entry, handle, ensure_ascii=False, indent=1)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
