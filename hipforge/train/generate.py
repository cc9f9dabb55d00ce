"""Generation from a causal LM over left-padded batches of token contexts: sampling with log-probabilities for
rollouts, and greedy or sampled completions for evaluation, each cut after the first end-of-turn. A repetition
guard ends a row caught in a loop (the same span of tokens over and over), which a small model greedy-decoding
falls into and would otherwise fill max_new_tokens with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Generated = tuple[list[int], list[float]]


def left_pad(contexts: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    """(input_ids, attention_mask), left-padded: every row's next token comes at the same column."""
    import torch

    width = max(len(c) for c in contexts)
    input_ids = torch.full((len(contexts), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    for i, context in enumerate(contexts):
        input_ids[i, width - len(context):] = torch.tensor(list(context))
        attention[i, width - len(context):] = 1
    return input_ids, attention


def repetition_guard(max_period: int = 16, repeats: int = 8) -> Any:
    """A stopping criterion, per row: the last ``repeats`` spans of some length <= max_period are identical."""
    import torch
    from transformers import StoppingCriteria

    class RepetitionGuard(StoppingCriteria):
        def __call__(self, input_ids: torch.Tensor, scores: Any, **_: Any) -> torch.Tensor:
            done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
            for period in range(1, max_period + 1):
                window = period * repeats
                if input_ids.shape[1] < window:
                    break
                tail = input_ids[:, -window:].reshape(input_ids.shape[0], repeats, period)
                done |= (tail == tail[:, :1]).all(dim=2).all(dim=1)
            return done

    return RepetitionGuard()


def _cut(rows: list[list[int]], eos_ids: Sequence[int]) -> list[int]:
    return [next((k + 1 for k, token in enumerate(ids) if token in eos_ids), len(ids)) for ids in rows]


def sample(model: Any, contexts: Sequence[Sequence[int]], pad_id: int, eos_ids: Sequence[int],
           max_new_tokens: int, temperature: float) -> list[Generated]:
    import torch

    device = next(model.parameters()).device
    input_ids, attention = left_pad(contexts, pad_id)
    width = input_ids.shape[1]
    was_training = model.training
    model.eval()  # also lets generate use its KV cache when gradient checkpointing is on
    try:
        with torch.no_grad():
            out = model.generate(
                input_ids=input_ids.to(device), attention_mask=attention.to(device), do_sample=True,
                temperature=temperature, top_k=0, top_p=1.0, repetition_penalty=1.0, max_new_tokens=max_new_tokens,
                pad_token_id=pad_id, eos_token_id=list(eos_ids), return_dict_in_generate=True, output_scores=True,
                use_cache=True)
    finally:
        model.train(was_training)
    new = out.sequences[:, width:]
    # scores are the logits after temperature: their log-softmax is the distribution the tokens came from. One
    # step at a time: stacking them all first costs steps x batch x vocab floats twice over (a 152k vocabulary
    # at 4,096 new tokens: 10 GB a copy)
    logps = torch.stack([step.float().log_softmax(-1).gather(-1, new[:, t:t + 1]).squeeze(-1)
                         for t, step in enumerate(out.scores)], dim=1)
    ids, lps = new.tolist(), logps.tolist()
    return [(row[:end], lp[:end]) for row, lp, end in zip(ids, lps, _cut(ids, eos_ids), strict=True)]


def complete(model: Any, contexts: Sequence[Sequence[int]], pad_id: int, eos_ids: Sequence[int],
             max_new_tokens: int, temperature: float = 0.0, guard: bool = True) -> list[list[int]]:
    """New tokens per context: greedy at temperature 0, else sampled; no scores kept (evaluation only)."""
    import torch
    from transformers import StoppingCriteriaList

    device = next(model.parameters()).device
    input_ids, attention = left_pad(contexts, pad_id)
    sampling = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0} if temperature > 0 \
        else {"do_sample": False}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model.generate(
                input_ids=input_ids.to(device), attention_mask=attention.to(device), max_new_tokens=max_new_tokens,
                pad_token_id=pad_id, eos_token_id=list(eos_ids), use_cache=True, **sampling,
                stopping_criteria=StoppingCriteriaList([repetition_guard()]) if guard else None)
    finally:
        model.train(was_training)
    rows = out[:, input_ids.shape[1]:].tolist()
    return [row[:end] for row, end in zip(rows, _cut(rows, eos_ids), strict=True)]
