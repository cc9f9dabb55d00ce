"""Pre-flight of a multi-GPU training config: a few steps of the tiny Qwen2 under the Accelerator an
accelerate config describes (data parallel, FSDP or ZeRO), then proof that the ranks trained one model.

Every rank overfits its own random token batch; afterwards all ranks score one shared batch. With
gradients synchronized (DDP all-reduce, FSDP/ZeRO reduce-scatter) every rank reports the same loss, and
the training loss fell. Prints per-rank tokens per second. Needs torch, transformers, accelerate.
Usage: accelerate launch --config_file configs/accelerate/ddp_2gpu_tiny.yaml scripts/ddp_check.py
       accelerate launch --config_file configs/accelerate/fsdp_8gpu_14b.yaml --num_processes 2 scripts/ddp_check.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.train.base_model import TinyQwen2  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import torch
    from accelerate import Accelerator
    from transformers import Qwen2Config, Qwen2ForCausalLM

    accelerator = Accelerator()
    spec = asdict(TinyQwen2())
    torch.manual_seed(spec.pop("seed"))  # the same initial weights on every rank
    model = Qwen2ForCausalLM(Qwen2Config(**spec, tie_word_embeddings=True))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model, optimizer = accelerator.prepare(model, optimizer)
    rank_batch = torch.Generator().manual_seed(1000 + accelerator.process_index)
    tokens = torch.randint(0, spec["vocab_size"], (args.batch, args.seq), generator=rank_batch).to(accelerator.device)
    shared = torch.randint(0, spec["vocab_size"], (args.batch, args.seq), generator=torch.Generator().manual_seed(7))
    shared = shared.to(accelerator.device)

    losses, started = [], time.perf_counter()
    for _ in range(args.steps):
        loss = model(input_ids=tokens, labels=tokens).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    seconds = time.perf_counter() - started
    with torch.no_grad():
        probe = model(input_ids=shared, labels=shared).loss.detach().reshape(1)
    probes = accelerator.gather(probe).tolist()
    rate = torch.tensor([args.steps * args.batch * args.seq / seconds], device=accelerator.device)
    rates = accelerator.gather(rate).tolist()
    if accelerator.is_main_process:
        report = {"distributed_type": str(accelerator.distributed_type), "processes": accelerator.num_processes,
                  "device": str(accelerator.device), "loss_first": losses[0], "loss_last": losses[-1],
                  "probe_loss_per_rank": probes, "tokens_per_s_per_rank": [round(r) for r in rates],
                  "same_model_on_every_rank": max(probes) - min(probes) < 1e-4, "loss_fell": losses[-1] < losses[0]}
        print(json.dumps(report, indent=1))
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))
        if not (report["same_model_on_every_rank"] and report["loss_fell"]):
            sys.exit("FAILED: the ranks disagree or the loss did not fall")


if __name__ == "__main__":
    main()
