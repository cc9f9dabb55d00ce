"""The offline evolutionary optimizer: mutate code-generation choices, keep the fastest correct kernel.

Each generation mutates the current best's parameters (block size, elements per thread, vector
width, unroll, fast-math intrinsics, GEMM tile and split-K, a conv's elementwise epilogue fused into it
or not), evaluates the children on the executor, and the fastest correct one seeds the next generation.
Every child records its parent (evolved_from).
Fast-math is only kept where the executor's tolerance check still passes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from hipforge.agents.base import AgentTask, Candidate, Declined, Verifier
from hipforge.agents.translator.offline import OfflineTranslator
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.translate import GenParams
from hipforge.translate.kernels.gemm_tiles import TILES
from hipforge.translate.params import EPILOGUES, GEMM_ENGINES

CHOICES: dict[str, tuple[object, ...]] = {
    "block_size": (64, 128, 256, 512, 1024),
    "elems_per_thread": (1, 2, 4, 8),
    "vector_width": (1, 4),
    "unroll": (1, 2, 4, 8),
    "fast_math": (False, True),
    "gemm_tile": ("auto", *TILES),
    "split_k": (0, 1, 2, 4, 8),
    "conv_epilogue": EPILOGUES,
    "gemm_epilogue": EPILOGUES,
    "gemm_engine": GEMM_ENGINES,
}
# the choices that address a bottleneck (execution/profile/signals.py's labels), mutated more often under it
FAVOURED: dict[str, tuple[str, ...]] = {
    # fused epilogues: one pass over the heavy op's output fewer
    "memory-bound": ("vector_width", "elems_per_thread", "unroll", "conv_epilogue", "gemm_epilogue"),
    "compute-bound": ("fast_math", "gemm_tile", "gemm_engine", "unroll"),
    "launch-bound": ("elems_per_thread", "block_size"),
}


@dataclass(frozen=True)
class Trial:
    params: GenParams
    candidate: Candidate
    result: EvalResult
    generation: int

    @property
    def kernel_id(self) -> str:
        return kernel_id(self.candidate.source)

    @property
    def runtime_ms(self) -> float:
        """Runtime of a correct kernel (its backend's typical time); infinity otherwise, so it never wins."""
        ok = self.result.verdict == Verdict.CORRECT and self.result.runtime is not None
        return self.result.runtime.typical_ms(self.result.backend) if ok else float("inf")


@dataclass
class Evolution:
    trials: list[Trial] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)

    @property
    def best(self) -> Trial | None:
        correct = [t for t in self.trials if t.runtime_ms < float("inf")]
        return min(correct, key=lambda t: t.runtime_ms) if correct else None


def offline_generate(task: AgentTask, params: GenParams) -> Candidate | Declined:
    """The offline translator with the given code-generation choices: what this optimizer mutates."""
    return OfflineTranslator(params=params).translate(task)


def live_choices(task: AgentTask, generate: Callable[[AgentTask, GenParams], Candidate | Declined],
                 params: GenParams, source: str) -> tuple[str, ...]:
    """The choices this task's code depends on: each one with another value that generates other code than
    `source` (a relu has no GEMM tile and no conv epilogue; mutating those would only repeat the parent).
    Translation takes milliseconds; a choice that matters usually shows at its first other value."""
    def differs(name: str, value: object) -> bool:
        try:
            made = generate(task, params.with_changes(**{name: value}))
        except ValueError:  # a combination the generator rejects
            return False
        return not isinstance(made, Declined) and made.source != source

    return tuple(name for name, options in CHOICES.items()
                 if any(differs(name, v) for v in options if v != getattr(params, name)))


def mutate(params: GenParams, rng: random.Random, fast_math: bool = True, favour: tuple[str, ...] = (),
           live: tuple[str, ...] = tuple(CHOICES)) -> GenParams:
    """One or two of the `live` fields changed to another allowed value; mostly ``favour``'s when given."""
    fields = [f for f in live if fast_math or f != "fast_math"]
    preferred = [f for f in favour if f in fields]
    if preferred and rng.random() < 0.75:  # sometimes any field: the label may be wrong (an estimate)
        fields = preferred
    changes = {}
    for name in rng.sample(fields, k=min(len(fields), rng.choice((1, 2)))):
        options = [v for v in CHOICES[name] if v != getattr(params, name)]
        changes[name] = rng.choice(options)
    return params.with_changes(**changes)


def evolve(
    task: AgentTask,
    generate: Callable[[AgentTask, GenParams], Candidate | Declined],
    evaluate: Callable[[Candidate, int], EvalResult],
    *,
    budget: int = 8,
    children: int = 4,
    seed: int = 0,
    fast_math: bool = True,
    start: GenParams | None = None,
    diagnose: Callable[[Trial], str | None] | None = None,
) -> Evolution:
    """Spend at most `budget` evaluations (``evaluate(candidate, generation)``); the first is the unmutated
    starting point. ``diagnose`` names the parent's bottleneck (profile/diagnose.py), which steers the mutations."""
    rng, run = random.Random(seed), Evolution()
    seen: set[str] = set()
    live: dict[str, tuple[str, ...]] = {}  # parent kernel -> the choices its code depends on

    def attempt(params: GenParams, parent: Trial | None, generation: int) -> None:
        made = generate(task, params)
        if isinstance(made, Declined):
            run.declined.append(made.reason)
            return
        if parent is not None:
            made = Candidate(made.source, made.agent, (parent.kernel_id,), made.inspirations, made.params)
        if kernel_id(made.source) in seen:  # a mutation that changed nothing in the code
            return
        seen.add(kernel_id(made.source))
        run.trials.append(Trial(params, made, evaluate(made, generation), generation))

    attempt(start or GenParams(), None, 0)
    generation, stale = 0, 0
    while len(run.trials) < budget and run.best is not None and stale < 3:
        generation += 1
        parent = run.best
        if parent.kernel_id not in live:
            live[parent.kernel_id] = live_choices(task, generate, parent.params, parent.candidate.source)
        if not live[parent.kernel_id]:
            break  # no choice changes this task's code
        favour = FAVOURED.get(diagnose(parent) or "", ()) if diagnose else ()
        before = len(run.trials)
        for _ in range(children):
            if len(run.trials) >= budget:
                break
            try:
                params = mutate(parent.params, rng, fast_math, favour, live[parent.kernel_id])
            except ValueError:  # a combination the generator rejects
                continue
            attempt(params, parent, generation)
        stale = stale + 1 if len(run.trials) == before else 0  # mutations keep producing duplicates
    return run


@dataclass
class OfflineEvolver:
    """The Evolver over the offline translator's choices. It restarts from the default parameters rather than
    `start`: the translator is deterministic, so its first trial is the starting kernel again."""

    budget: int = 8
    children: int = 4
    seed: int = 0
    name: str = "offline-evolver"
    side_by_side: bool = True  # each task's trials are its own

    def evolve(self, task: AgentTask, start: tuple[Candidate, EvalResult], verifier: Verifier) -> None:
        run = evolve(task, offline_generate, verifier.evaluate, budget=self.budget, children=self.children,
                     seed=self.seed)
        for reason in run.declined:
            verifier.decline(reason)
