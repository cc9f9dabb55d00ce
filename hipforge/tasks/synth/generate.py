"""One entry point for the three modes, offline or through an LLM.

Offline (the default) each mode writes the module itself. With an LLM the mode still makes every
decision that carries provenance (which operators, which seed, which spec) and the model writes
the module from the mode's prompt; the answer's code is pulled out with ``extract_code``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace

from hipforge.llm import LLMClient, LLMProvider, LLMRequest, complete_many, extract_code
from hipforge.tasks.synth.candidate import Mode, SeedTask, Synthetic
from hipforge.tasks.synth.compose import compose
from hipforge.tasks.synth.mutate import mutate
from hipforge.tasks.synth.spec import constrain

SYSTEM = (
    "You write PyTorch reference tasks in KernelBench format: `class Model(nn.Module)` with __init__ and "
    "forward, module-level size constants, `get_inputs()` returning the forward's input tensors and "
    "`get_init_inputs()` returning Model's constructor arguments. The forward must be deterministic and "
    "use only torch. Answer with one python code block."
)
TEMPERATURE = 0.8  # variety across drafts; each draft's own seed keeps it reproducible


def draft(mode: Mode, seed: int, index: int, seeds: Sequence[SeedTask] = ()) -> Synthetic:
    """The offline candidate number `index` of a mode for a seed (with the prompt an LLM would get)."""
    if mode == "composition":
        return compose(seed, index)
    if mode == "mutation":
        return mutate(seeds, seed, index)
    if mode == "constraint":
        return constrain(seed, index)
    raise ValueError(f"unknown mode {mode!r}: use composition, mutation or constraint")


def request(candidate: Synthetic) -> LLMRequest:
    return LLMRequest(
        prompt=candidate.prompt,
        system=SYSTEM,
        temperature=TEMPERATURE,
        seed=zlib.crc32(candidate.name.encode()),
    )


def write_with_llm(drafts: Sequence[Synthetic], llm: LLMProvider, concurrency: int = 8) -> list[Synthetic]:
    """The drafts with their modules written by the model; an answer without code is kept as it came,
    so the sanity checks reject it with a reason instead of it disappearing."""
    requests = [request(d) for d in drafts]
    # A client records its calls in one batch; a bare provider has nothing to record.
    if isinstance(llm, LLMClient):
        answers = llm.complete_many(requests, concurrency)
    else:
        answers = complete_many(llm, requests, concurrency)
    return [
        replace(d, source=extract_code(a.text, "python", marker="class Model") or a.text, via=llm.model)
        for d, a in zip(drafts, answers, strict=True)
    ]
