"""Synthetic reference tasks: mutation, composition and constraint generation, each sanity-checked.

- composition (``compose``): a seeded random subset of the 14 template operators (``operators``),
  ordered so the shapes fit, rendered as one KernelBench module (``chain``);
- mutation (``mutate``): a related variant of a reference or KernelBench task by AST edits (``edits``);
- constraint (``spec``): a spec from a small grammar, rendered as text and as the module;
- every mode can have an LLM write the module from its prompt instead (``generate``);
- ``sanity`` + ``probe`` run each module in the sandbox, ``similarity`` finds near-duplicates,
  ``screen`` applies both, ``pipeline`` drives rounds and stores rows and lineage.

Nothing here imports torch or Dagster.
"""

from hipforge.tasks.synth.candidate import MODES, Mode, SeedTask, Synthetic, stored_id
from hipforge.tasks.synth.chain import Chain, build_chain
from hipforge.tasks.synth.compose import compose, compose_chain
from hipforge.tasks.synth.generate import draft, write_with_llm
from hipforge.tasks.synth.mutate import mutate
from hipforge.tasks.synth.operators import OPERATORS, Operator
from hipforge.tasks.synth.pipeline import (
    PRESETS,
    SynthConfig,
    SynthSummary,
    load_seeds,
    screen_rounds,
    synthesize,
    synthesize_offline,
)
from hipforge.tasks.synth.sanity import Budget, Rejection, sanity_check
from hipforge.tasks.synth.screen import Outcome, Screen
from hipforge.tasks.synth.similarity import DEFAULT_THRESHOLD, fingerprint, near_duplicate_pairs, similarity
from hipforge.tasks.synth.spec import Spec, constrain, sample_spec

__all__ = [
    "DEFAULT_THRESHOLD",
    "MODES",
    "OPERATORS",
    "PRESETS",
    "Budget",
    "Chain",
    "Mode",
    "Operator",
    "Outcome",
    "Rejection",
    "Screen",
    "SeedTask",
    "Spec",
    "SynthConfig",
    "SynthSummary",
    "Synthetic",
    "build_chain",
    "compose",
    "compose_chain",
    "constrain",
    "draft",
    "fingerprint",
    "load_seeds",
    "mutate",
    "near_duplicate_pairs",
    "sample_spec",
    "sanity_check",
    "screen_rounds",
    "similarity",
    "stored_id",
    "synthesize",
    "synthesize_offline",
    "write_with_llm",
]
