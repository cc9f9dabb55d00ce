"""Mutation: a semantically related variant of a seed task (reference library or KernelBench).

One structural edit (op substitution, reordering or a different fusion pattern), often a shape and
batch change as well, sometimes a second structural edit; all offline, on the AST (``edits.py``).
The Model docstring says what changed; the lineage edge points at the seed's task id.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Sequence

from hipforge.tasks.errors import TaskError
from hipforge.tasks.source import parse_source
from hipforge.tasks.synth.astwalk import model_class
from hipforge.tasks.synth.candidate import SeedTask, Synthetic
from hipforge.tasks.synth.edits import refuse, resize, substitute
from hipforge.tasks.synth.reorder import reorder

STRUCTURAL = (substitute, reorder, refuse)


def mutate_source(seed: SeedTask, rng: random.Random) -> tuple[str, tuple[str, ...]] | None:
    """(variant source, what changed), or None when no edit applies to this seed."""
    tree = parse_source(seed.source)
    edits = rng.sample(STRUCTURAL, len(STRUCTURAL))
    notes: list[str] = []
    while edits and not notes:
        notes += filter(None, [edits.pop()(tree, rng)])
    if not notes or rng.random() < 0.5:
        notes += filter(None, [resize(tree, rng)])
    if notes and edits and rng.random() < 0.25:
        notes += filter(None, [edits.pop()(tree, rng)])
    cls = model_class(tree)
    if not notes or cls is None:
        return None
    old = ast.get_docstring(cls)
    text = f"Mutated from {seed.name}: {'; '.join(notes)}." + (f"\n\n{old}" if old else "")
    cls.body[: 1 if old else 0] = [ast.Expr(ast.Constant(text.replace("\n", "\n    ") + "\n    "))]
    return tidy(ast.unparse(ast.fix_missing_locations(tree))), tuple(notes)


def tidy(text: str) -> str:
    """PEP 8 blank lines back after ast.unparse: two around top-level blocks, one between methods."""
    out: list[str] = []
    for line in text.splitlines():
        if not line:  # unparse's own blank lines; whitespace-only lines inside strings stay
            continue
        top_block = line.startswith(("class ", "def ", "@"))
        after_block = line[:1].strip() and out and out[-1][:1].isspace()
        if out and (top_block or after_block):
            out += ["", ""]
        elif line.startswith("    def ") and out and not out[-1].rstrip().endswith(":"):
            out.append("")
        out.append(line.rstrip())
    return "\n".join(out) + "\n"


def mutation_prompt(seed: SeedTask, notes: Sequence[str]) -> str:
    kinds = " and ".join(dict.fromkeys(note.split(":")[0] for note in notes))
    return (
        f"Here is a PyTorch reference task in KernelBench format ({seed.name}):\n\n"
        f"```python\n{seed.source}\n```\n\n"
        f"Write a semantically related variant of it by {kinds}. The variant must be a different "
        "computation that still fits together, keep the KernelBench format, and have an output that "
        "depends on every input."
    )


def mutate(seeds: Sequence[SeedTask], seed: int, index: int) -> Synthetic:
    """A variant of a seeded random choice among the seeds (by name, so the pool's order does not matter)."""
    rng = random.Random(f"mutation:{seed}:{index}")
    pool = sorted(seeds, key=lambda s: s.name)
    for parent in rng.sample(pool, len(pool)):
        try:
            variant = mutate_source(parent, rng)
        except TaskError:  # a seed that does not parse offers nothing to edit
            continue
        if variant:
            source, notes = variant
            return Synthetic(
                f"synthetic/mutation/s{seed}-{index:03d}",
                "mutation",
                source,
                mutation_prompt(parent, notes),
                parents=(parent.task_id,),
            )
    raise ValueError(f"none of the {len(pool)} seed tasks offers a mutation")
