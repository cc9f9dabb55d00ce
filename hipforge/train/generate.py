"""Sampling from a causal LM for rollouts: a left-padded batch of token contexts in, per context the new tokens
(cut after the first end-of-turn) and their sampling log-probabilities out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Generated = tuple[list[int], list[float]]


def sample(model: Any, contexts: Sequence[Sequence[int]], pad_id: int, eos_ids: Sequence[int],
           max_new_tokens: int, temperature: float) -> list[Generated]:
    import torch

    device = next(model.parameters()).device
    width = max(len(c) for c in contexts)
    input_ids = torch.full((len(contexts), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    for i, context in enumerate(contexts):  # left padding: every row's next token comes at the same column
        input_ids[i, width - len(context):] = torch.tensor(list(context))
        attention[i, width - len(context):] = 1
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
    # scores are the logits after temperature: their log-softmax is the distribution the tokens came from
    logps = torch.stack(out.scores, dim=1).float().log_softmax(-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
    results = []
    for ids, lp in zip(new.tolist(), logps.tolist(), strict=True):
        end = next((k + 1 for k, token in enumerate(ids) if token in eos_ids), len(ids))
        results.append((ids[:end], lp[:end]))
    return results
