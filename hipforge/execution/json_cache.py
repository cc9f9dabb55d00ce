"""JSON documents by key under one directory: the evaluator's small content caches (reference timings,
gate verdicts). Writes go to a temp file that is then renamed, so concurrent writers never tear a
document: the last rename wins."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class JsonCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.root / f"{key}.json").read_text())
        except (OSError, ValueError):  # absent, or unreadable: as good as absent
            return None

    def write(self, key: str, document: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(document, f)
        os.replace(tmp, self.root / f"{key}.json")
