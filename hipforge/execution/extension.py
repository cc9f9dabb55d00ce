"""Importing a built Python extension from its shared library, for every backend."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import types
from pathlib import Path


def import_extension(name: str, so_path: Path) -> types.ModuleType:
    """The extension module `name` from `so_path` (not from sys.path: each build lives in its cache folder)."""
    loader = importlib.machinery.ExtensionFileLoader(name, str(so_path))
    spec = importlib.util.spec_from_file_location(name, str(so_path), loader=loader)
    if spec is None:
        raise ImportError(f"no extension module {name} at {so_path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
