"""ModelNew's construction, taken from the reference: its imports, the module-level code its class uses
(helper classes, functions, constants) and the Model class itself with forward left out.

Built by the same code in the same order, ModelNew draws the same random numbers as the reference, so
both hold the same weights under a harness that seeds before constructing each (KernelBench's) as well
as under one that copies the state dict, at any problem size; only forward is the translator's."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from hipforge import pyast
from hipforge.translate.errors import Untranslatable

GETTERS = ("get_inputs", "get_init_inputs")
SUPER_MODEL = re.compile(r"\bsuper\(\s*Model\s*,\s*self\s*\)")


@dataclass(frozen=True)
class ReferenceInit:
    imports: tuple[str, ...]  # the reference's import statements, as written
    support: tuple[str, ...]  # module-level code the class uses (helper classes, constants), as written
    body: tuple[str, ...]  # Model's statements but its docstring and forward, unindented (__init__ among them)
    bases: str  # Model's base classes, as written


def reference_init(source: str) -> ReferenceInit:
    tree = pyast.parse(source, "<task>")
    lines = source.splitlines()

    def text(node: ast.stmt) -> str:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return textwrap.dedent("\n".join(lines[first - 1:node.end_lineno]))

    imports, others, model = [], [], None
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(text(node))
        elif isinstance(node, ast.ClassDef) and node.name == "Model":
            model = node
        elif not (isinstance(node, ast.FunctionDef) and node.name in GETTERS):
            others.append(node)
    if model is None or model.decorator_list or model.keywords:
        raise Untranslatable("unsupported model: no plain `class Model(...)` statement to build ModelNew from")
    kept = [s for s in model.body if not (isinstance(s, ast.FunctionDef) and s.name == "forward" or _docstring(s))]
    if not any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in kept):
        raise Untranslatable("unsupported model: Model defines no __init__ to build ModelNew's weights with")
    body = [SUPER_MODEL.sub("super()", text(s)) for s in kept]
    if "Model" in _free_names([pyast.parse(b, "<model>") for b in body]):
        raise Untranslatable("unsupported model: Model's methods refer to Model itself")
    support = _needed(others, [*kept, *model.bases])
    return ReferenceInit(tuple(imports), tuple(text(n) for n in support), tuple(body),
                         ", ".join(ast.unparse(b) for b in model.bases))


def _docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _free_names(nodes: list[ast.AST]) -> set[str]:
    """Names the code reads that it neither binds nor takes as arguments: what it needs from its module."""
    read, bound = set(), set()
    for node in (n for root in nodes for n in ast.walk(root)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read - bound


def _defines(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def _needed(statements: list[ast.stmt], roots: list[ast.AST]) -> list[ast.stmt]:
    """The module-level statements the roots use, directly or through each other, in source order (the
    problem sizes only get_inputs reads stay behind)."""
    needed, chosen = _free_names(roots), set()
    while grown := [s for s in statements if id(s) not in chosen and _defines(s) & needed]:
        for statement in grown:
            chosen.add(id(statement))
            needed |= _free_names([statement])
    return [s for s in statements if id(s) in chosen]
