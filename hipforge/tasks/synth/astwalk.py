"""AST helpers the mutation edits share: where Model and forward are, and what counts as elementwise."""

from __future__ import annotations

import ast

UNARY = ("relu", "gelu", "silu", "mish", "tanh", "sigmoid", "hardswish", "elu", "softplus", "selu")
MODULES = ("ReLU", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Hardswish", "ELU", "Softplus")
_MODULE_NAMES = {m.lower() for m in MODULES}  # self.relu(x) calls an nn.ReLU attribute, most likely


def dotted(node: ast.expr) -> str:
    return (
        f"{dotted(node.value)}.{node.attr}" if isinstance(node, ast.Attribute) else getattr(node, "id", "?")
    )


def model_class(tree: ast.Module) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)


def forward(tree: ast.Module) -> ast.FunctionDef | None:
    cls = model_class(tree)
    body = cls.body if cls else []
    return next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)


def elementwise(node: ast.AST) -> bool:
    """A call elementwise in its first argument: an activation (function or module attribute) or clamp."""
    if not (isinstance(node, ast.Call) and node.args):
        return False
    name = dotted(node.func).split(".")[-1]
    return name in UNARY or name == "clamp" or name.lower() in _MODULE_NAMES


def scalar(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant | ast.Attribute)


def updated(stmt: ast.stmt) -> str | None:
    """The variable of `v = f(v, ...)` when f is elementwise in v (an activation, clamp or scalar op)."""
    if not (
        isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
    ):
        return None
    var, value = stmt.targets[0].id, stmt.value
    if elementwise(value):
        first = value.args[0]  # type: ignore[attr-defined]
        return var if isinstance(first, ast.Name) and first.id == var else None
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        sides = (value.left, value.right)
        mine = any(isinstance(s, ast.Name) and s.id == var for s in sides)
        return var if mine and all(isinstance(s, ast.Name) or scalar(s) for s in sides) else None
    return None
