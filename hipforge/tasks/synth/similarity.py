"""Near-duplicate detection over canonicalized source.

Two views of a task, both from its normalized source (no comments, docstrings or formatting):
- structure: token 3-grams with every self-bound name (variables, parameters, attributes, functions,
  constants, import aliases) numbered by first occurrence and every number, signed or not, made 0;
- operations: the multiset of library names (relu, Conv2d, transpose, ...) and arithmetic operators.
Similarity is the product of their Jaccard indices. Renaming, reformatting or resizing a task leaves
it at 1.0, while a different operator drops the operations factor, so one swapped activation in a
ten-line task is not a duplicate even though almost every token is shared.
"""

from __future__ import annotations

import ast
import bisect
import io
import keyword
import tokenize
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from hipforge import pyast
from hipforge.tasks.source import normalize_source

DEFAULT_THRESHOLD = 0.9
NGRAM = 3
_SKIP = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER}
_ARITHMETIC = {"+", "-", "*", "/", "//", "%", "**", "@"}


@dataclass(frozen=True)
class Fingerprint:
    grams: frozenset[tuple[str, ...]]
    ops: Counter[str]


class _Numbers(ast.NodeTransformer):
    """Every number (signed ones included) becomes 0: sizes and scalars are not structure."""

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if isinstance(node.op, ast.USub | ast.UAdd) and _number(node.operand):
            return ast.Constant(0)
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(0) if _number(node) else node


def _number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)


def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names the task binds itself, names of imported modules)."""
    bound: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            bound.add(node.attr)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            (bound if node.asname else modules).add(node.asname or node.name.split(".")[0])
    return bound, modules


def fingerprint(source: str) -> Fingerprint:
    """Both views of a source; TaskError if it does not parse."""
    tree = _Numbers().visit(pyast.parse(normalize_source(source)))
    text = ast.unparse(tree)
    bound, modules = _names(tree)
    numbering: dict[str, str] = {}
    tokens: list[str] = []
    ops: Counter[str] = Counter()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in _SKIP:
            continue
        if tok.type == tokenize.NAME and tok.string in bound:
            tokens.append(numbering.setdefault(tok.string, f"v{len(numbering)}"))
            continue
        tokens.append(tok.string)
        library_name = (
            tok.type == tokenize.NAME and not keyword.iskeyword(tok.string) and tok.string not in modules
        )
        if library_name or (tok.type == tokenize.OP and tok.string in _ARITHMETIC):
            ops[tok.string] += 1
    grams = frozenset(tuple(tokens[i : i + NGRAM]) for i in range(max(1, len(tokens) - NGRAM + 1)))
    return Fingerprint(grams, ops)


def similarity(a: Fingerprint, b: Fingerprint) -> float:
    structure = len(a.grams & b.grams) / max(1, len(a.grams | b.grams))
    operations = sum((a.ops & b.ops).values()) / max(1, sum((a.ops | b.ops).values()))
    return structure * operations


@dataclass(frozen=True)
class Match:
    name: str
    task_id: str
    score: float


def nearest(fp: Fingerprint, pool: Iterable[tuple[str, str, Fingerprint]], skip_id: str = "") -> Match | None:
    """The most similar (name, task_id, fingerprint) in the pool, ignoring the task's own id."""
    best: Match | None = None
    for name, tid, other in pool:
        if tid != skip_id:
            score = similarity(fp, other)
            if best is None or score > best.score:
                best = Match(name, tid, score)
    return best


class FingerprintIndex:
    """(name, task_id, fingerprint) entries kept in order of gram count, so a lookup at a threshold only
    scores entries whose sizes allow it: Jaccard(A, B) <= min(|A|, |B|) / max(|A|, |B|) for either view.
    Thousands of tasks screen in seconds instead of comparing every pair."""

    def __init__(self, entries: Iterable[tuple[str, str, Fingerprint]] = ()) -> None:
        self._sizes: list[int] = []
        self._entries: list[tuple[str, str, Fingerprint, int]] = []
        for name, tid, fp in entries:
            self.add(name, tid, fp)

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, name: str, tid: str, fp: Fingerprint) -> None:
        at = bisect.bisect_right(self._sizes, len(fp.grams))
        self._sizes.insert(at, len(fp.grams))
        self._entries.insert(at, (name, tid, fp, sum(fp.ops.values())))

    def best_above(self, fp: Fingerprint, threshold: float, skip_id: str = "") -> Match | None:
        """The most similar entry at or above the threshold (None if there is none): the same answer as
        ``nearest`` whenever ``nearest``'s score reaches the threshold."""
        if threshold <= 0:
            return nearest(fp, ((n, t, f) for n, t, f, _ in self._entries), skip_id)
        size, total = len(fp.grams), sum(fp.ops.values())
        lo = bisect.bisect_left(self._sizes, size * threshold)
        hi = bisect.bisect_right(self._sizes, size / threshold)
        best: Match | None = None
        for name, tid, other, other_total in self._entries[lo:hi]:
            if tid == skip_id or min(total, other_total) < threshold * max(total, other_total, 1):
                continue
            operations = _ops_jaccard(fp.ops, total, other.ops, other_total)
            if operations < threshold:
                continue
            structure = len(fp.grams & other.grams) / max(1, len(fp.grams | other.grams))
            score = structure * operations
            if score >= threshold and (best is None or score > best.score):
                best = Match(name, tid, score)
        return best


def _ops_jaccard(a: Counter[str], total_a: int, b: Counter[str], total_b: int) -> float:
    """The weighted Jaccard index of two op multisets (what ``similarity`` computes), without Counter algebra."""
    shared = sum(min(a[k], b[k]) for k in a.keys() & b.keys())
    return shared / max(1, total_a + total_b - shared)


def near_duplicate_pairs(items: list[tuple[str, str]], threshold: float) -> list[tuple[str, str, float]]:
    """Every pair of (name, source) items at or above the threshold, most similar first."""
    prints = [(name, fingerprint(source)) for name, source in items]
    pairs = [(a, b, similarity(fa, fb)) for i, (a, fa) in enumerate(prints) for b, fb in prints[i + 1 :]]
    return sorted((p for p in pairs if p[2] >= threshold), key=lambda p: -p[2])
