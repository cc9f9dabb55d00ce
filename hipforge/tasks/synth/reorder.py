"""The reordering edit: two adjacent elementwise steps of forward swap places."""

from __future__ import annotations

import ast
import random

from hipforge.tasks.synth.astwalk import dotted, elementwise, forward, scalar, updated


class _Swap(ast.NodeTransformer):
    """Swap the order of two nested elementwise steps at one chosen node:
    f(g(e)) -> g(f(e)), and f(e) * c -> f(e * c) (likewise +, -, /)."""

    def __init__(self, target: ast.expr) -> None:
        self.target = target
        self.result: ast.expr = target

    def visit(self, node: ast.AST) -> ast.AST:
        if node is not self.target:
            return self.generic_visit(node)
        if isinstance(node, ast.BinOp):
            self.result = node.left
            assert isinstance(self.result, ast.Call)
            node.left, self.result.args[0] = self.result.args[0], node
        else:
            assert isinstance(node, ast.Call) and isinstance(node.args[0], ast.Call)
            self.result = node.args[0]
            node.args[0], self.result.args[0] = self.result.args[0], node
        return self.result


def reorder(tree: ast.Module, rng: random.Random) -> str | None:
    """Reordering: swap two adjacent elementwise steps, as forward statements or nested in one expression."""
    fn = forward(tree)
    if fn is None:
        return None
    body = fn.body
    pairs: list[int | ast.expr] = [
        i
        for i in range(len(body) - 1)
        if (v := updated(body[i]))
        and v == updated(body[i + 1])
        and ast.unparse(body[i]) != ast.unparse(body[i + 1])
    ]
    pairs += [
        n
        for n in ast.walk(fn)
        if elementwise(n)
        and elementwise(n.args[0])  # type: ignore[attr-defined]
        and dotted(n.func) != dotted(n.args[0].func)
    ]  # type: ignore[attr-defined]
    pairs += [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Add | ast.Sub | ast.Mult | ast.Div)
        and elementwise(n.left)
        and scalar(n.right)
    ]
    if not pairs:
        return None
    site = rng.choice(pairs)
    if isinstance(site, int):
        body[site], body[site + 1] = body[site + 1], body[site]
        return f"reordering: `{ast.unparse(body[site])}` now runs before `{ast.unparse(body[site + 1])}`"
    before, swap = ast.unparse(site), _Swap(site)
    swap.visit(fn)
    return f"reordering: `{before}` became `{ast.unparse(swap.result)}`"
