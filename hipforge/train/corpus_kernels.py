"""The kernel half of the corpus: translate every task offline, evolve a few children of each translation,
verify every candidate through the evaluation pool, and verify the corrupted attempts of the fixes.

Everything an evaluation pool sees goes out in one batch per stage, so a GPU box keeps all its slots busy
(builds overlap on every core; the compile cache is content-addressed, so a rerun compiles nothing twice).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hipforge.agents.base import AgentTask, Declined, Feedback
from hipforge.agents.evolver.offline import mutate, offline_generate
from hipforge.agents.prompts import feedback_from
from hipforge.execution.pool.base import EvalPool
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.train.corrupt import corruptions
from hipforge.translate import GenParams

Log = Callable[[str], None]


@dataclass(frozen=True)
class CorpusTask:
    task_id: str
    name: str
    mode: str
    source: str  # full size: what the prompt shows and kernels are written for
    eval_source: str  # what the backend runs (the smoke variant on cpu)
    group: str  # held-out key
    split: str


@dataclass
class Attempt:
    source: str
    result: EvalResult
    how: str  # translated | evolved | a corruption's name

    @property
    def correct(self) -> bool:
        return self.result.verdict == Verdict.CORRECT

    def runtime_ms(self) -> float:
        result = self.result
        return result.runtime.typical_ms(result.backend) if self.correct and result.runtime else float("inf")


@dataclass
class TaskKernels:
    task: CorpusTask
    attempts: list[Attempt] = field(default_factory=list)
    declined: str = ""  # why the translator declined

    def best(self) -> Attempt | None:
        correct = [a for a in self.attempts if a.correct]
        return min(correct, key=Attempt.runtime_ms) if correct else None

    def failures(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.correct]


def candidates(task: CorpusTask, children: int, seed: int) -> tuple[list[tuple[str, str]], str]:
    """([(source, how)]: the translation and up to ``children`` distinct evolved variants, or the decline)."""
    agent_task = AgentTask(task.task_id, task.name, task.source)
    first = offline_generate(agent_task, GenParams())
    if isinstance(first, Declined):
        return [], first.reason
    made, seen = [(first.source, "translated")], {first.source}
    rng = random.Random(f"{seed}/{task.task_id}")
    for _ in range(children * 3):  # some mutations change nothing in the code
        if len(made) > children:
            break
        try:
            child = offline_generate(agent_task, mutate(GenParams(), rng))
        except ValueError:  # a combination the generator rejects
            continue
        if not isinstance(child, Declined) and child.source not in seen:
            seen.add(child.source)
            made.append((child.source, "evolved"))
    return made, ""


Job = tuple[int, str, str, str]  # (owner task's index, candidate, task source it runs against, how it was made)


def verify_all(pool: EvalPool, jobs: Sequence[Job], log: Log,
               deadline: float | None = None) -> list[tuple[int, Attempt]]:
    """Every job through the pool; (job index, attempt) in the order they finish. Past ``deadline`` (a
    time.monotonic() value) the rest is abandoned: a boxed run keeps what it verified in time."""
    out: list[tuple[int, Attempt]] = []
    step = max(1, len(jobs) // 10)
    for done, (i, result) in enumerate(pool.evaluate_many([(c, t) for _, c, t, _ in jobs]), 1):
        out.append((i, Attempt(jobs[i][1], result, jobs[i][3])))
        if done % step == 0 or done == len(jobs):
            log(f"verified {done}/{len(jobs)}")
        if deadline is not None and time.monotonic() > deadline and done < len(jobs):
            log(f"verification box over: {done} of {len(jobs)} verified, the rest left out")
            break
    return out


def translate_and_verify(tasks: Sequence[CorpusTask], pool: EvalPool, children: int, seed: int,
                         log: Log, deadline: float | None = None) -> list[TaskKernels]:
    kernels = [TaskKernels(t) for t in tasks]
    jobs = []
    for i, tk in enumerate(kernels):
        made, declined = candidates(tk.task, children, seed)
        tk.declined = declined
        jobs += [(i, source, tk.task.eval_source, how) for source, how in made]
    jobs.sort(key=lambda job: job[3] != "translated")  # a box that ends early keeps a kernel for more tasks
    log(f"{sum(not k.declined for k in kernels)} of {len(kernels)} tasks translated; {len(jobs)} candidates")
    for index, attempt in verify_all(pool, jobs, log, deadline):
        kernels[jobs[index][0]].attempts.append(attempt)
    return kernels


@dataclass
class Fix:
    """A failed attempt with the verifier's feedback, and the verified kernel that fixes it."""

    kernels: TaskKernels
    attempt: Feedback
    how: str


def corrupted_fixes(kernels: Sequence[TaskKernels], pool: EvalPool, per_task: int, feedback_chars: int,
                    log: Log, deadline: float | None = None) -> tuple[list[Fix], dict[str, int]]:
    """Corrupt each verified best kernel (one corruption per expected verdict, up to ``per_task``), run them,
    keep those whose verdict is the one claimed; counts of kept and mismatched per corruption."""
    jobs: list[Job] = []
    claims: list[str] = []
    for i, tk in enumerate(kernels):
        best = tk.best()
        if best is None or per_task <= 0:
            continue
        chosen: set[str] = set()
        for c in corruptions(best.source):
            if c.expected not in chosen and len(chosen) < per_task:
                chosen.add(c.expected)
                claims.append(c.expected)
                jobs.append((i, c.source, tk.task.eval_source, c.name))
    counts: Counter[str] = Counter()
    fixes = []
    for index, attempt in verify_all(pool, jobs, log, deadline):
        got = attempt.result.verdict.value
        counts[f"{attempt.how}/{'kept' if got == claims[index] else 'got ' + got}"] += 1
        if got == claims[index]:
            owner = kernels[jobs[index][0]]
            fixes.append(Fix(owner, feedback_from(attempt.source, attempt.result, feedback_chars), attempt.how))
    return fixes, dict(counts)


# what a kernel's own code caused; a timeout or a lost worker says more about the machine than the kernel
TEACHING_VERDICTS = (Verdict.COMPILE_ERROR, Verdict.RUNTIME_ERROR, Verdict.INCORRECT)


def real_fixes(kernels: Sequence[TaskKernels], feedback_chars: int) -> list[Fix]:
    """Evolved or translated candidates the executor rejected, for tasks that also have a verified kernel."""
    return [Fix(tk, feedback_from(a.source, a.result, feedback_chars), a.how)
            for tk in kernels if tk.best() is not None for a in tk.failures()
            if a.result.verdict in TEACHING_VERDICTS and a.result.phase != "pool"]
