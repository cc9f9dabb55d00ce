"""Task files dropped into a folder: which ones are new since last time, and as candidates."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hipforge.tasks.ingest import TaskCandidate


def scan_inbox(folder: Path) -> dict[str, str]:
    """{file name: content hash} of every *.py file in the folder (none if it does not exist)."""
    if not folder.is_dir():
        return {}
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(folder.glob("*.py"))}


def ignored_files(folder: Path) -> list[str]:
    """Files in the folder that are not tasks (only *.py files are): named back to the user, not dropped
    silently."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix != ".py" and not p.name.startswith("."))


def new_files(current: dict[str, str], seen: dict[str, str]) -> list[str]:
    """Files that are new or whose content changed since the `seen` snapshot."""
    return [name for name, digest in current.items() if seen.get(name) != digest]


def inbox_candidates(folder: Path, names: list[str]) -> list[TaskCandidate]:
    """Candidates for the named files; a file that vanished meanwhile is skipped, not an error."""
    paths = [folder / name for name in names]
    return [TaskCandidate(f"file/{p.stem}", p.read_text(errors="replace"), "file") for p in paths if p.is_file()]
