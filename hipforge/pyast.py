"""Thread-safe Python parsing.

CPython 3.11 keeps the AST conversion's recursion depth in interpreter-wide state, so two threads
calling ``ast.parse`` (or ``compile`` on a tree) at once can fail with "AST constructor recursion
depth mismatch". Every parse in hipforge that may run in a worker thread goes through here.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

AST_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    with AST_LOCK:
        return ast.parse(source, filename, mode)


def compile_tree(tree: ast.AST | str, filename: str, mode: str = "exec") -> CodeType:
    """compile() of a tree or of source text (which parses it too)."""
    with AST_LOCK:
        return compile(tree, filename, mode)
