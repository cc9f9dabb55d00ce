"""The LLM evolutionary optimizer (agent 4), in the style of ShinkaEvolve: sample a parent by score and
novelty, show the model the most similar verified kernels, the current best and recent failures, reject
near-duplicates before they cost an evaluation, and keep every evaluated child with its lineage."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import AgentTask, Candidate, Verifier
from hipforge.agents.evolver.selection import DEDUP_THRESHOLD, near_duplicate, pick_parent
from hipforge.agents.judge.offline import PlausibilityJudge
from hipforge.agents.prompts import RULES, bottleneck_hint, feedback_from, tail
from hipforge.execution.profile.signals import Profile
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.llm import LLMClient, LLMRequest, LLMRetriesExhausted, extract_code

EVOLVER_SYSTEM = f"""You optimize HIP kernels for AMD MI350X (gfx950) in KernelBench's HIP format.
You are shown a reference, a correct parent kernel and related kernels; write a faster ModelNew that stays
correct (coalesced and vectorized memory access, fusion, shared memory tiling, fewer launches, warp-level
reductions with warpSize).

{RULES}"""


@dataclass
class Node:
    """One evaluated program of the population."""

    candidate: Candidate
    result: EvalResult
    generation: int
    children: int = 0

    @property
    def kernel_id(self) -> str:
        return kernel_id(self.candidate.source)

    @property
    def correct(self) -> bool:
        return self.result.verdict == Verdict.CORRECT

    @property
    def score(self) -> float:
        """Speedup over eager (what the evolution maximizes); a correct kernel without timings scores 1."""
        return self.result.speedup_eager if self.result.speedup_eager is not None else 1.0


@dataclass
class LLMEvolution:
    nodes: list[Node] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (kernel id or "-", why it was not evaluated)

    @property
    def best(self) -> Node | None:
        correct = [n for n in self.nodes if n.correct]
        return max(correct, key=lambda n: n.score) if correct else None

    def skip(self, kernel: str, why: str, verifier: Verifier) -> None:
        """A proposal not evaluated and not judged: kept here and told to the verifier."""
        self.rejected.append((kernel, why))
        verifier.skip(why)


class LLMEvolver:
    side_by_side = False  # prompts show the most similar verified kernels of the whole archive

    def __init__(self, client: LLMClient, archive: KernelArchive | None = None,
                 judge: PlausibilityJudge | None = None, *, budget: int = 8, lam: float = 10.0,
                 dedup_threshold: float = DEDUP_THRESHOLD, inspirations: int = 2, failures: int = 3, seed: int = 0,
                 temperature: float = 0.8, diagnose: Callable[[Node], Profile | None] | None = None) -> None:
        self.client, self.archive, self.judge = client, archive, judge
        self.budget, self.lam, self.dedup_threshold = budget, lam, dedup_threshold
        self.inspirations, self.failures, self.seed, self.temperature = inspirations, failures, seed, temperature
        self.diagnose = diagnose  # the parent's profile (execution/profile/diagnose.py), shown in the prompt
        self.name = f"llm-evolver:{client.model}"

    def evolve(self, task: AgentTask, start: tuple[Candidate, EvalResult], verifier: Verifier) -> LLMEvolution:
        """Spend at most `budget` evaluations on children of the correct programs, from `start`; proposals
        (LLM calls) are capped at three times the budget so a model repeating itself cannot loop forever."""
        run = LLMEvolution([Node(*start, 0)])
        try:
            self._grow(task, run, verifier)
        except LLMRetriesExhausted as err:
            verifier.decline(f"the model could not be reached: {err}")
        return run

    def _grow(self, task: AgentTask, run: LLMEvolution, verifier: Verifier) -> None:
        rng = random.Random(self.seed)
        evaluated = 0
        for proposal in range(3 * self.budget):
            parents = [n for n in run.nodes if n.correct]
            if evaluated >= self.budget or not parents:
                break
            parent = parents[pick_parent([n.score for n in parents], [n.children for n in parents], rng, self.lam)]
            best = run.best
            similar = self._similar(parent, best)
            answer = self.client.complete(LLMRequest(
                prompt=self._prompt(task, parent, best, similar, run), system=EVOLVER_SYSTEM,
                temperature=self.temperature, seed=self.seed * 1000 + proposal))
            source = extract_code(answer.text, "python")
            if "class ModelNew" not in source:
                run.skip("-", "no ModelNew in the answer", verifier)
                continue
            duplicate = near_duplicate(source, [n.candidate.source for n in run.nodes], self.dedup_threshold)
            if duplicate is not None:
                run.skip(kernel_id(source), f"near-duplicate (similarity {duplicate:.3f})", verifier)
                continue
            if self.judge is not None:
                report = self.judge.judge(source, task.source)
                if not report.passed:
                    why = f"plausibility {report.score}: {'; '.join(report.reasons)}"
                    run.rejected.append((kernel_id(source), why))
                    verifier.reject(Candidate(source, self.name, (parent.kernel_id,)), report)
                    continue
            inspired = tuple(dict.fromkeys([*(r["kernel_id"] for r in similar), *([best.kernel_id] if best else [])]))
            candidate = Candidate(source, self.name, (parent.kernel_id,),
                                  tuple(k for k in inspired if k != parent.kernel_id), {"proposal": proposal})
            node = Node(candidate, verifier.evaluate(candidate, parent.generation + 1), parent.generation + 1)
            parent.children += 1
            evaluated += 1
            run.nodes.append(node)

    def _similar(self, parent: Node, best: Node | None) -> list[dict[str, Any]]:
        if self.archive is None or self.inspirations <= 0:
            return []
        shown = {parent.kernel_id, best.kernel_id if best else ""}
        rows = self.archive.similar_verified(parent.candidate.source, self.inspirations + 2)
        return [r for r in rows if r["kernel_id"] not in shown][: self.inspirations]

    def _prompt(self, task: AgentTask, parent: Node, best: Node | None, similar: list[dict[str, Any]],
                run: LLMEvolution) -> str:
        parts = [f"Reference:\n{task.source.rstrip()}", f"Parent kernel (correct, speedup {parent.score:.3f}x "
                 f"over eager):\n{parent.candidate.source.rstrip()}"]
        if self.diagnose is not None and (found := self.diagnose(parent)) is not None:
            parts.append(bottleneck_hint(found))
        if best is not None and best.kernel_id != parent.kernel_id:
            parts.append(f"Current best (speedup {best.score:.3f}x):\n{best.candidate.source.rstrip()}")
        for row in similar:
            speedup = f"{row['speedup_eager']:.3f}x" if row.get("speedup_eager") is not None else "untimed"
            parts.append(f"A similar verified kernel (speedup {speedup}):\n{row['source'].rstrip()}")
        # oldest first, this run's own failures last, so the newest ones survive the cut
        failures = list(reversed(self.archive.recent_failures(task.task_id, self.failures))) if self.archive else []
        failures += [feedback_from(n.candidate.source, n.result) for n in run.nodes if not n.correct]
        # the archive holds this run's evaluated children too: each failure once
        failures = list({f.source: f for f in failures}.values())
        if failures := failures[-self.failures:]:
            parts.append("Recent failures to avoid:\n" + "\n".join(
                f"- {f.verdict}: {tail(f.message, 400)}" for f in failures))
        parts.append("Write a faster ModelNew. Answer with the complete Python file only.")
        return "\n\n".join(parts)
