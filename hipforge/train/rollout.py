"""Multi-turn GRPO rollouts (TRL's rollout_func): each candidate is scored by the executor; a failed one gets
its verdict and error back as a user turn and tries again, up to max_retries times. The trajectory is one
completion: model turns (env_mask 1) and feedback turns (env_mask 0, kept out of the loss). Rewards are
smoothed, then turned into TRLOO advantages per (prompt, turn) over the return-to-go."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hipforge.agents.base import Feedback
from hipforge.agents.prompts import feedback_from, feedback_prompt
from hipforge.execution.verdict import Verdict
from hipforge.train.config import GRPOHyper
from hipforge.train.generate import sample
from hipforge.train.records import Messages, Record
from hipforge.train.scoring import CandidateScorer, Job
from hipforge.train.smoothing import RewardSmoother
from hipforge.train.trloo import Trajectory, returns_to_go, trloo_advantages

_SENTINEL = "\x00attempt\x00"


@dataclass
class Turn:
    feedback_ids: list[int]  # what the environment said before this turn (empty for the first)
    ids: list[int]  # what the model wrote
    logprobs: list[float]
    reward: float = 0.0  # smoothed
    raw_reward: float = 0.0
    verdict: str = ""
    speedup: float | None = None  # over eager, for a correct candidate
    feedback: Feedback | None = None  # the verifier's word on this turn's candidate


@dataclass
class Episode:
    group: int
    record: Record
    prompt_ids: list[int]
    turns: list[Turn] = field(default_factory=list)
    last_kernel: str | None = None

    def context(self, pending: list[int]) -> list[int]:
        return self.prompt_ids + assemble(self.turns)[0] + pending


def assemble(turns: Sequence[Turn]) -> tuple[list[int], list[float], list[int], list[tuple[int, int]]]:
    """(completion ids, log-probs, env_mask, each model turn's [start, end) span) of one trajectory."""
    ids: list[int] = []
    logps: list[float] = []
    mask: list[int] = []
    spans = []
    for turn in turns:
        ids += turn.feedback_ids
        logps += [0.0] * len(turn.feedback_ids)
        mask += [0] * len(turn.feedback_ids)
        spans.append((len(ids), len(ids) + len(turn.ids)))
        ids += turn.ids
        logps += turn.logprobs
        mask += [1] * len(turn.ids)
    return ids, logps, mask, spans


def feedback_text(tokenizer: Any, feedback: str, ended_with_eos: bool) -> str:
    """The chat-template text between a model turn and the next: close the turn, the user's feedback, open
    the assistant's turn. Read off the tokenizer's own template, so it matches any ChatML-style model."""
    messages = [{"role": "user", "content": "task"}, {"role": "assistant", "content": _SENTINEL},
                {"role": "user", "content": feedback}]
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    delta = rendered[rendered.index(_SENTINEL) + len(_SENTINEL):]
    eos = tokenizer.eos_token or ""
    return delta[len(eos):] if ended_with_eos and eos and delta.startswith(eos) else delta


class MultiTurnRollout:
    def __init__(self, tokenizer: Any, records: Sequence[Record], scorer: CandidateScorer, hyper: GRPOHyper) -> None:
        self.tokenizer, self.scorer, self.hyper = tokenizer, scorer, hyper
        self.by_prompt = {r.prompt[-1]["content"]: r for r in records}
        self.smoother = RewardSmoother(hyper.smoothing_window, hyper.smoothing_sigmas)
        self.eos_ids = [tokenizer.eos_token_id]
        self.last: list[tuple[list[tuple[int, int]], list[float]]] = []  # per trajectory: spans, advantages
        self.steps: list[dict[str, float]] = []  # per call: rewards and throughput, for curves
        self.rollouts, self.generation_s, self.generated_tokens = 0, 0.0, 0

    def __call__(self, prompts: list[Messages], trainer: Any) -> dict[str, list]:
        """TRL's rollout_func: prompts arrive already repeated num_generations times, group by group."""
        _check_whole_groups(prompts, trainer.num_generations)
        model = trainer.accelerator.unwrap_model(trainer.model)
        episodes = [Episode(i // trainer.num_generations, self._record(p), self._prompt_ids(p))
                    for i, p in enumerate(prompts)]
        self.run(model, episodes, trainer.state.global_step)
        return self.output(episodes)

    def run(self, model: Any, episodes: list[Episode], step: int) -> None:
        pending = {i: [] for i in range(len(episodes))}  # feedback ids waiting in front of the next turn
        for _ in range(1 + self.hyper.max_retries):
            active = sorted(pending)
            if not active:
                break
            started = time.monotonic()
            contexts = [episodes[i].context(pending[i]) for i in active]
            generated = sample(model, contexts, self.tokenizer.pad_token_id, self.eos_ids,
                               self.hyper.max_new_tokens, self.hyper.temperature)
            self.generation_s += time.monotonic() - started
            self.generated_tokens += sum(len(ids) for ids, _ in generated)
            for i, (ids, logps) in zip(active, generated, strict=True):
                episodes[i].turns.append(Turn(pending[i], ids, logps))
            self._score([episodes[i] for i in active], step)
            pending = {i: self._feedback(episodes[i]) for i in active if episodes[i].turns[-1].verdict !=
                       Verdict.CORRECT}
            pending = {i: ids for i, ids in pending.items()
                       if len(episodes[i].context(ids)) + self.hyper.max_new_tokens <= self.hyper.max_context}
        self.rollouts += len(episodes)

    def output(self, episodes: list[Episode]) -> dict[str, list]:
        advantages = trloo_advantages([Trajectory(e.group, tuple(t.reward for t in e.turns)) for e in episodes])
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                "turn_return": []}
        self.last = []
        for episode, advantage in zip(episodes, advantages, strict=True):
            ids, logps, mask, spans = assemble(episode.turns)
            for key, value in zip(("prompt_ids", "completion_ids", "logprobs", "env_mask"),
                                  (episode.prompt_ids, ids, logps, mask), strict=True):
                out[key].append(value)
            out["turn_return"].append(returns_to_go([t.reward for t in episode.turns])[0])
            self.last.append((spans, advantage))
        self.steps.append({**step_stats(episodes), "return_mean": sum(out["turn_return"]) / len(episodes),
                           "evaluations": self.scorer.evaluations})
        return out

    def token_advantages(self, width: int) -> list[list[float]]:
        """(trajectories × completion width): each model turn's tokens carry that turn's TRLOO advantage."""
        rows = []
        for spans, advantages in self.last:
            row = [0.0] * width
            for (start, end), advantage in zip(spans, advantages, strict=True):
                row[start:end] = [advantage] * (end - start)
            rows.append(row)
        return rows

    def _score(self, episodes: list[Episode], step: int) -> None:
        jobs = [Job(e.record.task_id, self._text(e.turns[-1].ids), e.record.eval_source, e.last_kernel)
                for e in episodes]
        scored = self.scorer(jobs, step)
        smoothed = self.smoother([s.reward for s in scored])
        for episode, job, s, reward in zip(episodes, jobs, scored, smoothed, strict=True):
            turn = episode.turns[-1]
            turn.raw_reward, turn.reward, turn.verdict = s.reward, reward, s.result.verdict.value
            turn.speedup = s.result.speedup_eager if s.result.verdict == Verdict.CORRECT else None
            turn.feedback = feedback_from(job.source, s.result, self.hyper.feedback_chars)
            episode.last_kernel = s.kernel_id

    def _feedback(self, episode: Episode) -> list[int]:
        turn = episode.turns[-1]
        if turn.feedback is None:
            raise RuntimeError("a turn must be scored before its feedback is sent back")
        ended = bool(turn.ids) and turn.ids[-1] in self.eos_ids
        text = feedback_text(self.tokenizer, feedback_prompt(turn.feedback), ended)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _text(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _prompt_ids(self, prompt: Messages) -> list[int]:
        rendered = self.tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        return self.tokenizer(rendered, add_special_tokens=False)["input_ids"]

    def _record(self, prompt: Messages) -> Record:
        try:
            return self.by_prompt[prompt[-1]["content"]]
        except KeyError as err:
            raise KeyError("rollout got a prompt that is not one of the RL records it was built with") from err


def step_stats(episodes: Sequence[Episode]) -> dict[str, float]:
    """One GRPO step's candidates: mean raw reward, correct rate, mean speedup of the correct ones, the share of
    non-zero rewards, and how many groups hold both a trajectory that ended correct and one that did not (only
    those give the policy a contrast to learn from)."""
    turns = [t for e in episodes for t in e.turns]
    speedups = [t.speedup for t in turns if t.speedup is not None]
    ended: dict[int, set[bool]] = {}
    for e in episodes:
        ended.setdefault(e.group, set()).add(bool(e.turns) and e.turns[-1].verdict == Verdict.CORRECT)
    return {"reward_mean": sum(t.raw_reward for t in turns) / len(turns), "turns": len(turns),
            "correct": sum(t.verdict == Verdict.CORRECT for t in turns),
            "correct_rate": sum(t.verdict == Verdict.CORRECT for t in turns) / len(turns),
            "speedup_mean": sum(speedups) / len(speedups) if speedups else 0.0,
            "nonzero_share": sum(t.raw_reward != 0.0 for t in turns) / len(turns),
            "groups": len(ended), "mixed_groups": sum(len(v) == 2 for v in ended.values())}


def _check_whole_groups(prompts: list[Messages], size: int) -> None:
    """TRLOO is computed here, per process: each group's generations must all be on this process. TRL slices
    its generation batch contiguously per process, so a per-device batch that is a multiple of
    num_generations keeps groups whole (data parallel over GPUs works); anything else is refused."""
    blocks = [prompts[i:i + size] for i in range(0, len(prompts), size)]
    if len(prompts) % size or any(any(p != block[0] for p in block) for block in blocks):
        raise RuntimeError(f"rollout got {len(prompts)} prompts that are not whole groups of {size}: make the "
                           "per-device batch a multiple of num_generations")
