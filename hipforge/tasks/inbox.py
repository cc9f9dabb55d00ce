"""Task files dropped into a folder: which ones are new since last time, and as candidates."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hipforge.tasks.ingest import TaskCandidate


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def scan_inbox(folder: Path) -> dict[str, str]:
    """{file name: content hash} of every *.py file in the folder (none if it does not exist)."""
    if not folder.is_dir():
        return {}
    return {p.name: content_hash(p.read_bytes()) for p in sorted(folder.glob("*.py"))}


def already_stored(current: dict[str, str], stored: dict[str, str]) -> dict[str, str]:
    """The files of `current` whose very content the warehouse holds as the task named after them (`stored`:
    {task name: source}, the inbox's origin): what a sensor with no cursor yet (its first tick after a demo or
    a reset) counts as seen, not as new."""
    return {name: digest for name, digest in current.items()
            if (source := stored.get(inbox_task_name(name))) is not None and content_hash(source.encode()) == digest}


def inbox_task_name(file_name: str) -> str:
    return f"file/{Path(file_name).stem}"


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
    return [TaskCandidate(inbox_task_name(p.name), p.read_text(errors="replace"), "file") for p in paths if p.is_file()]
