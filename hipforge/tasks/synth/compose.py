"""Composition: a seeded random subset of the 14 operators, ordered so the shapes fit, as one module."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hipforge.tasks.synth.candidate import Synthetic
from hipforge.tasks.synth.chain import Chain, build_chain
from hipforge.tasks.synth.operators import OPERATORS, Operator

SUBSET_SIZES = (3, 5)  # operators per module, inclusive
SUBSETS_TRIED = 500
ORDERS_PER_SUBSET = 6


def compose_chain(seed: int, index: int = 0, operators: Sequence[Operator] = OPERATORS) -> Chain:
    """The first shape-compatible ordering of a seeded subset; the same (seed, index) gives the same chain."""
    rng = random.Random(f"composition:{seed}:{index}")
    for _ in range(SUBSETS_TRIED):
        subset = rng.sample(list(operators), rng.randint(*SUBSET_SIZES))
        for _ in range(ORDERS_PER_SUBSET):
            order = rng.sample(subset, len(subset))
            chain = build_chain(rng, order, rng.choice(sorted(order[0].layouts)))
            if chain is not None:
                return chain
    raise RuntimeError(f"no shape-compatible composition for seed {seed}, index {index}")


def describe(chain: Chain, title: str) -> str:
    steps = "\n".join(f"{i}. {step.op}: {step.summary}" for i, step in enumerate(chain.steps, 1))
    return f"{title}\n\n{steps}"


def composition_prompt(chain: Chain) -> str:
    catalog = "\n".join(f"- {op.name}: {op.doc}" for op in OPERATORS)
    wanted = ", ".join(chain.operators)
    return (
        f"Operator library:\n{catalog}\n\nCompose these operators into one PyTorch module, in an order "
        f"whose tensor shapes fit: {wanted}. The input is a {chain.layout} tensor "
        "(feat = (B, F), seq = (B, N, F), image = (B, C, H, W), volume = (B, C, D, H, W)). Use every "
        "operator at least once, keep sizes as module-level constants, and make the output depend on "
        "every input."
    )


def compose(seed: int, index: int) -> Synthetic:
    chain = compose_chain(seed, index)
    title = f"Composition of {len(chain.steps)} template operators: {' -> '.join(chain.operators)}."
    return Synthetic(
        f"synthetic/composition/s{seed}-{index:03d}",
        "composition",
        chain.render(describe(chain, title)),
        composition_prompt(chain),
        operators=chain.operators,
    )
