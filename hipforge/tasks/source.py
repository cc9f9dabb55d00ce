"""Static checks on a task's source: syntax, required names, banned constructs, size constants, identity.

Nothing here imports or runs the task; ``reference_run`` does that in a sandbox.
"""

from __future__ import annotations

import ast
import hashlib
import operator
from typing import Any

from hipforge import pyast
from hipforge.tasks.errors import ErrorCode, TaskError

Constant = int | float | tuple[int, ...]

REQUIRED_NAMES: dict[str, ErrorCode] = {
    "Model": "missing_model",
    "get_inputs": "missing_get_inputs",
    "get_init_inputs": "missing_get_init_inputs",
}
# A reference only describes a computation: it has no reason to spawn, talk to the network or write files.
BANNED_MODULES = {"subprocess", "socket", "multiprocessing", "shutil", "http", "urllib", "requests",
                  "pty", "webbrowser", "ftplib", "smtplib", "importlib"}
BANNED_OS_CALLS = {"system", "popen", "fork", "forkpty", "kill", "killpg", "remove", "unlink", "rmdir",
                   "removedirs", "rename", "renames", "replace", "truncate", "putenv", "unsetenv"}
BANNED_OS_PREFIXES = ("exec", "spawn", "posix_spawn")
BANNED_BUILTINS = {"eval", "exec", "compile", "__import__", "breakpoint", "input"}
BANNED_METHODS = {"write_text", "write_bytes"}
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def parse_source(source: str, filename: str = "<task>") -> ast.Module:
    """Parse and compile (compiling also catches e.g. ``return`` outside a function)."""
    try:
        tree = pyast.parse(source, filename)
        pyast.compile_tree(tree, filename)
    except SyntaxError as e:
        line = f": {e.text.strip()}" if e.text and e.text.strip() else ""
        raise TaskError("syntax_error", f"line {e.lineno}: {e.msg}{line}") from None
    except ValueError as e:  # e.g. null bytes in the source
        raise TaskError("syntax_error", str(e)) from None
    return tree


def check_source(source: str, filename: str = "<task>") -> ast.Module:
    """Raise TaskError unless the source parses, defines the KernelBench names and uses nothing banned."""
    tree = parse_source(source, filename)
    bound = module_bindings(tree)
    for name, code in REQUIRED_NAMES.items():
        if name not in bound:
            kind = "class" if name == "Model" else "function"
            raise TaskError(code, f"the source defines no module-level {kind} `{name}`")
    banned = find_banned(tree)
    if banned:
        raise TaskError("banned_construct", "; ".join(banned))
    return tree


def module_bindings(tree: ast.Module) -> set[str]:
    """Names bound by module-level statements (including those inside top-level if/try/with blocks)."""
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, field, []))
    return names


def find_banned(tree: ast.Module) -> list[str]:
    """Best-effort list of forbidden constructs, each as "line N: what"; the sandbox is the real guard."""
    found: list[str] = []
    os_aliases = {"os"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in BANNED_MODULES:
                    found.append(f"line {node.lineno}: import of {alias.name}")
                elif alias.name == "os":
                    os_aliases.add(alias.asname or "os")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in BANNED_MODULES:
                found.append(f"line {node.lineno}: import from {node.module}")
            elif node.module == "os":
                found += [f"line {node.lineno}: import of os.{a.name}"
                          for a in node.names if _banned_os(a.name)]
        elif isinstance(node, ast.Call):
            what = _banned_call(node, os_aliases)
            if what:
                found.append(f"line {node.lineno}: {what}")
    return found


def _banned_os(attr: str) -> bool:
    return attr in BANNED_OS_CALLS or attr.startswith(BANNED_OS_PREFIXES)


def _banned_call(node: ast.Call, os_aliases: set[str]) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in BANNED_BUILTINS:
        return f"call to {func.id}()"
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id in os_aliases and _banned_os(func.attr):
            return f"call to os.{func.attr}()"
        if func.attr in BANNED_METHODS:
            return f"call to .{func.attr}()"
    is_open = (isinstance(func, ast.Name) and func.id == "open") or (
        isinstance(func, ast.Attribute) and func.attr == "open"
        and isinstance(func.value, ast.Name) and func.value.id in {"io", "builtins"})
    if is_open:
        mode = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "mode"), ast.Constant("r"))
        if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
            return "open() with a computed mode"
        if set(mode.value) & set("wax+"):
            return f"open() for writing (mode {mode.value!r})"
    return None


def eval_constant(node: ast.expr, env: dict[str, Any]) -> Any:
    """Value of a constant expression over known names (ints, floats, tuples, lists); None if not one."""
    try:
        return _eval(node, env)
    except (KeyError, TypeError, ValueError, ArithmeticError, RecursionError):
        return None


def _eval(node: ast.expr, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and node.value is not None:
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        seqs = [isinstance(x, list | tuple) for x in (left, right)]
        if isinstance(node.op, ast.Mult) and seqs[0] != seqs[1]:  # refuse `[0] * 10**9` before building it
            length, times = (len(left), right) if seqs[0] else (len(right), left)
            if length * times > 4096:
                raise ValueError("sequence too long")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Tuple | ast.List):
        items: list[Any] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                items.extend(_eval(elt.value, env))
            else:
                items.append(_eval(elt, env))
        return tuple(items) if isinstance(node, ast.Tuple) else items
    raise TypeError(f"not a constant: {ast.dump(node)[:40]}")


def assignments(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """(name, value expression) for every top-level name assignment, unpacking literal tuples."""
    pairs: list[tuple[str, ast.expr]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs.extend(_pairs(target, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs.extend(_pairs(node.target, node.value))
    return pairs


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[str, ast.expr]]:
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
        if len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in value.elts):
            return [p for t, v in zip(target.elts, value.elts, strict=True) for p in _pairs(t, v)]
    return []


def is_size_value(value: Any) -> bool:
    """int, float, or a tuple/list of ints (bools excluded: they are flags, not sizes)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, list | tuple) and all(type(v) is int for v in value)


def size_constants(source: str | ast.Module) -> dict[str, Constant]:
    """Module-level size constants in source order; sequences come back as tuples."""
    tree = parse_source(source) if isinstance(source, str) else source
    env: dict[str, Any] = {}
    for name, expr in assignments(tree):
        value = eval_constant(expr, env)
        if is_size_value(value):
            env[name] = value
        else:
            env.pop(name, None)  # rebound to something else: no longer a constant
    return {k: tuple(v) if isinstance(v, list) else v for k, v in env.items()}


class _StripStrings(ast.NodeTransformer):
    """Drop docstrings and other bare string statements: they never change what the code computes."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                and isinstance(s.value.value, str))]
                setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))
        return node


def normalize_source(source: str) -> str:
    """Canonical text of a task: AST round-trip without comments, docstrings or formatting."""
    tree = _StripStrings().visit(parse_source(source))
    return ast.unparse(ast.fix_missing_locations(tree))


def task_id(source: str) -> str:
    """Content address of a task: first 16 hex chars of sha256 of the normalized source."""
    return hashlib.sha256(normalize_source(source).encode()).hexdigest()[:16]
