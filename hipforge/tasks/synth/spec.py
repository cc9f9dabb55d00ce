"""Constraint generation: a spec of the computation, tensor properties and structure, from a small
grammar, rendered both as text (the module's docstring, and an LLM's prompt) and as the module.

    spec      := pattern layout structure
    pattern   := slot slot*          a slot admits the operators PATTERNS lists (None: may be empty)
    layout    := feat | seq | image | volume                 the input, with named sizes
    structure := chain | residual    residual: a last step adds back an earlier same-shape tensor

Text and module come from the same operator steps, so what the spec says is what the module does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hipforge.tasks.synth.candidate import Synthetic
from hipforge.tasks.synth.chain import Chain, build_chain
from hipforge.tasks.synth.operators import BY_NAME

# pattern -> (input layouts, slots)
PATTERNS: dict[str, tuple[tuple[str, ...], tuple[tuple[str | None, ...], ...]]] = {
    "gemm_epilogue": (
        ("feat", "seq"),
        (
            ("linear",),
            ("activation", "bias_scale", "clamp"),
            ("activation", "clamp", "dropout", None),
            ("softmax", "norm", None),
        ),
    ),
    "conv_block": (("image",), (("conv2d",), ("norm",), ("activation",), ("pool", "dropout", None))),
    "upsample_block": (
        ("image",),
        (("conv_transpose2d",), ("bias_scale",), ("activation", "clamp"), ("norm", None)),
    ),
    "volume_block": (
        ("volume",),
        (("conv3d",), ("norm", "bias_scale"), ("activation",), ("pool", "reduction", None)),
    ),
    "attention_scores": (("seq",), (("bmm",), ("bias_scale",), ("softmax",), ("dropout", None))),
    "pooled_head": (
        ("image",),
        (("conv2d",), ("activation",), ("reduction",), ("linear",), ("softmax", None)),
    ),
    "normalized_mlp": (
        ("feat", "seq"),
        (("norm",), ("linear",), ("activation",), ("linear",), ("dropout", None)),
    ),
}
RESIDUAL_SHARE = 0.3
TRIES = 200


@dataclass(frozen=True)
class Spec:
    pattern: str
    structure: str  # "chain" or "residual"
    chain: Chain

    def text(self) -> str:
        chain, env = self.chain, self.chain.env
        steps = [f"  {i}. {step.op}: {step.summary}" for i, step in enumerate(chain.steps, 1)]
        tensors = [
            f"  input {var}: float32, standard normal, shape ({', '.join(f'{d}={env[d]}' for d in dims)})"
            for var, dims in chain.inputs
        ]
        tensors.append(f"  output: float32, shape {tuple(chain.shapes()[chain.output.var])}")
        structure = (
            "residual: the last step adds back an earlier tensor of the same shape (a skip connection)"
            if self.structure == "residual"
            else f"chain: {len(chain.steps)} steps, one after the other, no branches"
        )
        constants = ", ".join(f"{name}={env[name]}" for name in chain.init_args())
        return "\n".join(
            [
                f"Spec ({self.pattern}, {chain.layout} input).",
                "",
                "Computation:",
                *steps,
                "Tensors:",
                *tensors,
                f"Structure: {structure}.",
                f"Constructor arguments (get_init_inputs): {constants or 'none'}.",
            ]
        )


def sample_spec(seed: int, index: int = 0) -> Spec:
    """A seeded walk through the grammar; a choice whose shapes cannot fit is drawn again."""
    rng = random.Random(f"constraint:{seed}:{index}")
    for _ in range(TRIES):
        pattern = rng.choice(sorted(PATTERNS))
        layouts, slots = PATTERNS[pattern]
        structure = "residual" if rng.random() < RESIDUAL_SHARE else "chain"
        names = [name for slot in slots if (name := rng.choice(slot))]
        names += ["residual_add"] if structure == "residual" else []
        chain = build_chain(rng, [BY_NAME[name] for name in names], rng.choice(layouts))
        if chain is not None:
            return Spec(pattern, structure, chain)
    raise RuntimeError(f"no spec fits for seed {seed}, index {index}")


def constraint_prompt(spec_text: str) -> str:
    return (
        f"Write a PyTorch module that meets this specification exactly:\n\n{spec_text}\n\nName every size "
        "and constructor argument as a module-level constant with the value given."
    )


def constrain(seed: int, index: int) -> Synthetic:
    spec = sample_spec(seed, index)
    text = spec.text()
    return Synthetic(
        f"synthetic/constraint/s{seed}-{index:03d}",
        "constraint",
        spec.chain.render(text),
        constraint_prompt(text),
        operators=spec.chain.operators,
        spec=text,
    )
