"""AST edits that turn a seed task into a related variant (reordering lives in ``reorder.py``).

Each edits the tree in place and says what it did, or returns None when the seed offers no place for
it. Only ``class Model`` and module-level size constants are touched; replacements keep arity and
shapes, so the variant still fits together.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Iterator

from hipforge import pyast
from hipforge.tasks.smoke import BATCH, PROTECTED
from hipforge.tasks.synth.astwalk import MODULES, UNARY, dotted, forward, model_class, updated

Edit = Callable[[ast.Module, random.Random], "str | None"]
IN_TORCH = {"relu", "tanh", "sigmoid", "selu"}  # torch.<name>; the rest live in torch.nn.functional
FAMILIES = (
    ("softmax", "log_softmax"),
    ("sum", "mean", "amax", "amin"),
    *((f"max_pool{d}d", f"avg_pool{d}d") for d in (1, 2, 3)),
    *((f"MaxPool{d}d", f"AvgPool{d}d") for d in (1, 2, 3)),
)
FUNCTIONAL = {"F", "torch", "functional", "torch.nn.functional", "nn.functional"}
POOL_KEYWORDS = {"kernel_size", "stride", "padding"}
INDICES = re.compile(r"\barg(max|min|sort)\b")  # integer outputs take no float epilogue
AXIS = re.compile(r"(^|_)(dim|axis)$")  # `dim = 2` names an axis, not a size
EPILOGUES = (
    "torch.sigmoid({})",
    "torch.tanh({})",
    "torch.nn.functional.gelu({})",
    "({}) * 0.5",
    "torch.clamp({}, min=-1.0, max=1.0)",
    "torch.nn.functional.silu({})",
    "({}) + 0.1",
)


def expression(text: str) -> ast.expr:
    tree = pyast.parse(text, mode="eval")
    assert isinstance(tree, ast.Expression)
    return tree.body


def _calls(tree: ast.Module) -> Iterator[ast.Call]:
    cls = model_class(tree)
    yield from (n for n in ast.walk(cls) if isinstance(n, ast.Call)) if cls else ()


def _family(call: ast.Call) -> tuple[str, ...] | None:
    """The interchangeable names a call may switch to, when switching keeps arity and shapes."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    name, prefix, plain = func.attr, dotted(func.value), not call.keywords
    if name in UNARY and prefix in FUNCTIONAL and len(call.args) == 1 and plain:
        return UNARY
    if name in MODULES and prefix in {"nn", "torch.nn"} and not call.args:
        return MODULES
    for family in FAMILIES:
        if name in family:
            pooling = "pool" in name.lower()
            positional = 4 if prefix in FUNCTIONAL else 3  # functional pools also take the input
            if pooling and (len(call.args) > positional or {k.arg for k in call.keywords} - POOL_KEYWORDS):
                return None
            has_dim = any(k.arg == "dim" for k in call.keywords) or len(call.args) >= (
                2 if prefix in FUNCTIONAL else 1
            )
            return family if pooling or name.endswith("softmax") or has_dim else None
    return None


def substitute(tree: ast.Module, rng: random.Random) -> str | None:
    """Op substitution: an activation, pooling, softmax or reduction becomes a sibling of its family."""
    sites = [(call, family) for call in _calls(tree) if (family := _family(call))]
    if not sites:
        return None
    call, family = rng.choice(sites)
    assert isinstance(call.func, ast.Attribute)
    old, new = call.func.attr, rng.choice([n for n in family if n != call.func.attr])
    if family is UNARY:
        call.func = expression("torch." + ("" if new in IN_TORCH else "nn.functional.") + new)
    elif family is MODULES:
        call.func, call.keywords = expression(f"torch.nn.{new}"), []
    else:
        call.func.attr = new
    return f"op substitution: {old} became {new}"


def refuse(tree: ast.Module, rng: random.Random) -> str | None:
    """A different fusion pattern: an elementwise epilogue on the output, or one elementwise step removed."""
    fn = forward(tree)
    if fn is None:
        return None
    returns = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Return)
        and n.value is not None
        and not isinstance(n.value, ast.Tuple)
        and not INDICES.search(ast.unparse(n.value))
    ]
    removable = [s for s in fn.body if updated(s)] if len(fn.body) > 2 else []
    if removable and (not returns or rng.random() < 0.3):
        stmt = rng.choice(removable)
        fn.body.remove(stmt)
        return f"fusion pattern: removed the elementwise step `{ast.unparse(stmt)}`"
    if not returns:
        return None
    epilogue = rng.choice(EPILOGUES)
    for ret in returns:
        ret.value = expression(epilogue.format(ast.unparse(ret.value)))
    return f"fusion pattern: added the epilogue {epilogue.format('out')}"


def resize(tree: ast.Module, rng: random.Random) -> str | None:
    """Shape and batch changes: the batch, and all other sizes together, halve or double."""
    sites = [
        (n.targets[0].id, n.value)
        for n in tree.body
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and isinstance(n.value, ast.Constant)
        and type(n.value.value) is int
        and n.value.value > 1
        and not PROTECTED.search(n.targets[0].id)
        and not (AXIS.search(n.targets[0].id) and n.value.value <= 4)
    ]
    notes = []
    for group in ([s for s in sites if BATCH.search(s[0])], [s for s in sites if not BATCH.search(s[0])]):
        if not group or rng.random() < 0.3:
            continue
        halve = all(c.value % 2 == 0 and c.value >= 16 for _, c in group) and rng.random() < 0.6
        for _, const in group:
            const.value = const.value // 2 if halve else const.value * 2
        notes.append(f"{'halved' if halve else 'doubled'} {', '.join(name for name, _ in group)}")
    return f"shape and batch changes: {'; '.join(notes)}" if notes else None
