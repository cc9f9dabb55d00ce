"""SFT boxed by the wall clock, for the training flow: a model trained for a number of seconds (the learning
rate set by the clock), its held-out loss probed along the way, and a sweep over model sizes that keeps the one
with the lowest held-out loss."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hipforge.train import hf, sft
from hipforge.train.base_model import TinyQwen2, build_model
from hipforge.train.config import SFTHyper
from hipforge.train.flow_data import chat_tokens
from hipforge.train.records import Record

BIG = 10**9  # max_steps of a boxed run: the clock stops it


@dataclass(frozen=True)
class Size:
    name: str
    spec: TinyQwen2
    learning_rate: float  # the peak; smaller models take larger steps


def validation_loss(model: Any, tokenizer: Any, records: Sequence[Record], batch_size: int = 16) -> float:
    """Mean negative log-likelihood per completion token (the kernel), the prompt given."""
    import torch

    device = next(model.parameters()).device
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(records), batch_size):
            batch = records[start:start + batch_size]
            prompts = [chat_tokens(tokenizer, r.prompt, True) for r in batch]
            fulls = [chat_tokens(tokenizer, r.prompt + r.completion, False) for r in batch]
            width = max(len(f) for f in fulls)
            ids = torch.full((len(batch), width), tokenizer.pad_token_id, dtype=torch.long)
            labels = torch.full_like(ids, -100)
            mask = torch.zeros_like(ids)
            for i, (p, f) in enumerate(zip(prompts, fulls, strict=True)):
                ids[i, :len(f)] = torch.tensor(f)
                labels[i, len(p):len(f)] = torch.tensor(f[len(p):])
                mask[i, :len(f)] = 1
            with torch.no_grad(), torch.autocast(device.type, torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()
            shifted = labels[:, 1:].to(device)
            nll = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                                    shifted.reshape(-1), ignore_index=-100, reduction="sum")
            total += float(nll)
            count += int((shifted != -100).sum())
    finally:
        model.train(was_training)
    return total / max(count, 1)


def train_boxed(model: Any, tokenizer: Any, records: Sequence[Record], validation: Sequence[Record], out_dir: Path,
                hyper: SFTHyper, seconds: float, probes: int = 4, on_log: hf.LogFn | None = None,
                tokenized: Any = None) -> dict[str, Any]:
    """SFT for ``seconds`` of training (cosine by the clock to hyper.learning_rate's tenth), held-out loss at
    ``probes`` points, and the model left at the probe where that loss was lowest (a small corpus is memorized
    long before the box ends: on 489 records the held-out loss rose from 1.58 to 1.83 over a minute of SFT).
    Returns the curve [(step, seconds, held-out loss)], the kept step and its loss, steps, tokens/s, the loss and
    the tokenized records (for the next run: sft.build_trainer's ``tokenized``)."""
    curve: list[tuple[int, float, float]] = []
    best: dict[str, Any] = {"loss": math.inf}

    def probe(step: int, elapsed: float) -> None:
        if curve and curve[-1][0] == step:  # two marks passed within one step
            return
        loss = round(validation_loss(model, tokenizer, validation), 4)
        curve.append((step, elapsed, loss))
        if "state" not in best or loss < best["loss"]:  # the first probe is kept whatever it reads (NaN too)
            best.update(loss=loss, step=step, state={k: v.detach().to("cpu", copy=True)
                                                     for k, v in model.state_dict().items()})

    boxed = dataclasses.replace(hyper, max_steps=BIG, lr_scheduler="constant", warmup_steps=0)
    clock = hf.wall_clock(seconds, hyper.learning_rate, warmup_s=min(5.0, seconds / 10), on_mark=probe,
                          marks=probes)
    trainer = sft.build_trainer(model, tokenizer, records, out_dir, boxed, on_log, [clock], tokenized)
    probe(0, 0.0)  # where it starts: training on from a checkpoint may only make it worse
    started = time.monotonic()
    trainer.train()
    wall = time.monotonic() - started
    probe(trainer.state.global_step, round(clock.elapsed(), 2))
    steps = trainer.state.global_step
    if best["step"] != steps:
        model.load_state_dict(best["state"])
    tokens = steps * hyper.batch_size * _mean_tokens(tokenizer, records)
    return {"curve": curve, "steps": steps, "kept_step": best["step"], "seconds": round(wall, 1),
            "train_seconds": round(clock.elapsed(), 1),
            "tokens_per_s": round(tokens / max(clock.elapsed(), 1e-9)), "validation_loss": best["loss"],
            "loss": hf.curve(trainer.state.log_history, "loss"), "tokenized": trainer.train_dataset}


def _mean_tokens(tokenizer: Any, records: Sequence[Record], sample: int = 64) -> float:
    chosen = records[:: max(1, len(records) // sample)]
    return sum(len(chat_tokens(tokenizer, r.prompt + r.completion, False)) for r in chosen) / max(len(chosen), 1)


def sweep(sizes: Sequence[Size], tokenizer: Any, records: Sequence[Record], validation: Sequence[Record],
          work: Path, hyper: SFTHyper, seconds: float, device: str,
          on_log: hf.LogFn | None = None) -> tuple[Size, Any, list[dict[str, Any]], Any]:
    """Each size trained from scratch for ``seconds``; (the best size, its model, every run's summary, the
    tokenized records)."""
    if not sizes:
        raise ValueError("a sweep needs at least one model size")
    runs, best, tokenized = [], (math.inf, None, None), None
    for size in sizes:
        model = build_model(size.spec, tokenizer, device)
        run = train_boxed(model, tokenizer, records, validation, work / size.name,
                          dataclasses.replace(hyper, learning_rate=size.learning_rate), seconds, on_log=on_log,
                          tokenized=tokenized)
        tokenized = run.pop("tokenized")
        parameters = sum(p.numel() for p in model.parameters())
        runs.append({"size": size.name, "parameters": parameters, "learning_rate": size.learning_rate,
                     "spec": dataclasses.asdict(size.spec), **{k: v for k, v in run.items() if k != "loss"}})
        if run["validation_loss"] < best[0]:
            best = (run["validation_loss"], size, model)
        else:
            del model
    assert best[1] is not None
    return best[1], best[2], runs, tokenized
