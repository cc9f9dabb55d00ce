"""Checkpoints on evaluation tasks, boxed by the wall clock: one greedy answer (with a repetition guard) and k
samples per task from each checkpoint, then every distinct candidate of all of them scored by the executor in one
pass (the syntax gate first), greedy ones first and the checkpoints in turn, until the deadline. Rows per
checkpoint and split: parse rate, compiled, correct, fast_1 and geomean of the greedy answers, and pass@k over the
samples, each over the n tasks whose answers were evaluated in time. Compiled means built and loaded (past the
build phase), so a candidate the static checks reject counts as not compiled."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hipforge.bench.scoring import TaskScore, summary
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.train.flow_data import EvalTask, chat_tokens
from hipforge.train.generate import complete
from hipforge.train.scoring import CandidateScorer, Job


@dataclass
class Answers:
    task: EvalTask
    greedy: str | None  # None: the prompt does not fit the model's context
    samples: list[str] = field(default_factory=list)


def answer(model: Any, tokenizer: Any, tasks: Sequence[EvalTask], max_new_tokens: int, samples: int,
           temperature: float, max_context: int, batch_size: int = 256) -> list[Answers]:
    """Greedy and sampled answers for every task whose prompt leaves max_new_tokens of room in the context."""
    out = [Answers(t, None) for t in tasks]
    fits = []
    for i, task in enumerate(tasks):
        ids = chat_tokens(tokenizer, task.prompt, True)
        if len(ids) + max_new_tokens <= max_context:
            fits.append((i, ids))
    rows = [(i, ids, 0.0) for i, ids in fits] + [(i, ids, temperature) for i, ids in fits for _ in range(samples)]
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        for temp in sorted({t for _, _, t in chunk}):
            part = [(i, ids) for i, ids, t in chunk if t == temp]
            texts = complete(model, [ids for _, ids in part], tokenizer.pad_token_id, [tokenizer.eos_token_id],
                             max_new_tokens, temp)
            for (i, _), new in zip(part, texts, strict=True):
                text = tokenizer.decode(new, skip_special_tokens=True)
                if temp == 0.0:
                    out[i].greedy = text
                else:
                    out[i].samples.append(text)
    return out


def score(answer_sets: Sequence[Sequence[Answers]], scorer: CandidateScorer, deadline: float,
          chunk: int = 16) -> dict[tuple[str, str], EvalResult]:
    """Verdicts by (task name, candidate), distinct candidates only (the same answer of two checkpoints is
    judged once): every greedy answer of every checkpoint first, then the samples, in chunks until the deadline
    (time.monotonic()). The checkpoints and their splits are taken in turn, so a box that ends early has judged
    some tasks of each."""
    order: list[tuple[str, str, str]] = []  # (task name, candidate, eval source)
    seen: set[tuple[str, str]] = set()
    answers = _interleaved([_round_robin(a) for a in answer_sets])
    for texts in ([a.greedy] for a in answers), (a.samples for a in answers):
        for a, candidates in zip(answers, texts, strict=True):
            for c in candidates:
                if c is not None and (a.task.name, c) not in seen:
                    seen.add((a.task.name, c))
                    order.append((a.task.name, c, a.task.eval_source))
    verdicts: dict[tuple[str, str], EvalResult] = {}
    for start in range(0, len(order), chunk):
        if time.monotonic() >= deadline:
            break
        part = order[start:start + chunk]
        scored = scorer([Job(name, c, src) for name, c, src in part])
        verdicts.update({(name, c): s.result for (name, c, _), s in zip(part, scored, strict=True)})
    return verdicts


def _round_robin(answers: Sequence[Answers]) -> list[Answers]:
    """The answers with their splits taken in turn, each split in its own order."""
    by_split: dict[str, list[Answers]] = {}
    for a in answers:
        by_split.setdefault(a.task.split, []).append(a)
    return _interleaved(list(by_split.values()))


def _interleaved(columns: Sequence[Sequence[Answers]]) -> list[Answers]:
    return [col[i] for i in range(max(map(len, columns), default=0)) for col in columns if i < len(col)]


def evaluate(checkpoints: Sequence[tuple[str, Any]], tokenizer: Any, tasks: Sequence[EvalTask],
             scorer: CandidateScorer, seconds: float, max_new_tokens: int, samples: int, temperature: float,
             max_context: int) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]], list[dict[str, Any]]]:
    """(rows per checkpoint and split, seconds spent generating and scoring, the greedy answers with their
    verdicts) of (name, model) checkpoints: every checkpoint's answers first, then ``seconds`` of scoring all of
    them in one pass through the scorer's slots (generation is bounded by max_new_tokens, scoring by the
    clock)."""
    timing: dict[str, dict[str, float]] = {}
    answered = []
    for name, model in checkpoints:
        started = time.monotonic()
        answered.append(answer(model, tokenizer, tasks, max_new_tokens, samples, temperature, max_context))
        timing[name] = {"generation_s": round(time.monotonic() - started, 1)}
    started = time.monotonic()
    verdicts = score(answered, scorer, started + seconds, chunk=max(1, scorer.parallel))
    timing["scoring"] = {"scoring_s": round(time.monotonic() - started, 1), "candidates_scored": len(verdicts)}
    out_rows = [row for (name, _), answers in zip(checkpoints, answered, strict=True)
                for row in rows(name, answers, verdicts, samples)]
    said = [t for (name, _), answers in zip(checkpoints, answered, strict=True)
            for t in transcript(name, answers, verdicts)]
    return out_rows, timing, said


def transcript(checkpoint: str, answers: Sequence[Answers],
               verdicts: dict[tuple[str, str], EvalResult]) -> list[dict[str, Any]]:
    """What each greedy answer was and what the executor said of it: the record to read when rates are zero."""
    out = []
    for a in answers:
        result = verdicts.get((a.task.name, a.greedy)) if a.greedy is not None else None
        out.append({"checkpoint": checkpoint, "split": a.task.split, "task": a.task.name, "answer": a.greedy,
                    "verdict": result.verdict.value if result else None,
                    "phase": result.phase if result else None,
                    "message": (result.message[:600] if result else
                                "prompt too long for the context" if a.greedy is None else "not judged in time")})
    return out


BUILT = ("check", "time", "done")  # phases past the build: the module compiled and loaded


def _parsed(result: EvalResult) -> bool:
    return not (result.verdict == Verdict.COMPILE_ERROR and result.phase == "static")


def _compiled(result: EvalResult | None) -> bool:
    """Built and loaded (a static rejection, of syntax or of a hack pattern, never reached a compiler)."""
    return result is not None and (result.verdict == Verdict.CORRECT or result.phase in BUILT)


def rows(checkpoint: str, answers: Sequence[Answers], verdicts: dict[tuple[str, str], EvalResult],
         samples: int) -> list[dict[str, Any]]:
    """One row per split: greedy scores over the tasks judged in time (a prompt too long for the context counts
    as a failed task), pass@k over the tasks whose k samples were all judged."""
    out = []
    for split in sorted({a.task.split for a in answers}):
        mine = [a for a in answers if a.task.split == split]
        judged = [(a, verdicts.get((a.task.name, a.greedy)) if a.greedy is not None else None) for a in mine]
        judged = [(a, r) for a, r in judged if r is not None or a.greedy is None]
        scores = [TaskScore(a.task.name, _compiled(r), r is not None and r.verdict == Verdict.CORRECT,
                            r.speedup_eager if r is not None else None) for a, r in judged]
        s = summary(scores)
        sampled = [[verdicts.get((a.task.name, c)) for c in a.samples] for a in mine if a.greedy is not None]
        complete_sets = [v for v in sampled if len(v) == samples and all(r is not None for r in v)]
        out.append({
            "checkpoint": checkpoint, "split": split, "n": len(scores), "n_planned": len(mine),
            "parsed": sum(r is not None and _parsed(r) for _, r in judged) / max(len(judged), 1),
            "compiled": s["compiled"], "correct": s["correct"], "fast_1": s["fast_1"], "geomean": s["geomean"],
            f"pass@{samples}": (sum(any(r.verdict == Verdict.CORRECT for r in v) for v in complete_sets)
                                / len(complete_sets)) if complete_sets else None,
            f"n_pass@{samples}": len(complete_sets),
            "verdicts": _count([r.verdict.value for _, r in judged if r is not None]),
        })
    return out


def _count(values: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return counts
