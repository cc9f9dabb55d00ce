"""SFT with TRL's SFTTrainer on prompt/completion chat records: the loss covers the completion (the
verified kernel) only; LoRA optional."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hipforge.train import base_model, hf
from hipforge.train.config import SFTHyper
from hipforge.train.records import Record


def build_trainer(model: Any, tokenizer: Any, records: Sequence[Record], out_dir: Path, hyper: SFTHyper,
                  on_log: hf.LogFn | None = None, callbacks: Sequence[Any] = (), tokenized: Any = None) -> Any:
    """The SFT trainer over a loaded model (a path's, or one built in memory). ``tokenized``: the records as an
    earlier trainer with the same tokenizer prepared them (its train_dataset), so they are not tokenized again."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if not records or any(r.kind != "sft" for r in records):
        raise ValueError("SFT needs at least one record, all of kind 'sft'")
    hf.checkpointing_inputs(model, hyper.lora_rank > 0, hyper.gradient_checkpointing)
    data = tokenized if tokenized is not None else \
        Dataset.from_list([{"prompt": r.prompt, "completion": r.completion} for r in records])
    args = SFTConfig(
        num_train_epochs=hyper.epochs, max_steps=hyper.max_steps, per_device_train_batch_size=hyper.batch_size,
        learning_rate=hyper.learning_rate, lr_scheduler_type=hyper.lr_scheduler, warmup_steps=hyper.warmup_steps,
        max_length=hyper.max_length, completion_only_loss=hyper.completion_only_loss,
        **hf.common_args(str(out_dir / "trainer"), hyper.bf16, hyper.seed, hyper.gradient_checkpointing),
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                         peft_config=hf.lora_config(hyper.lora_rank), callbacks=[hf.log_callback(on_log), *callbacks])
    return hf.quiet(trainer)


def train_sft(model_path: str, records: Sequence[Record], out_dir: Path, hyper: SFTHyper,
              on_log: hf.LogFn | None = None, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Fine-tune, save model and tokenizer to out_dir; returns the metrics (loss curve, steps, seconds)."""
    hf.set_threads(hyper.cpu_threads)
    model, tokenizer = base_model.load(model_path, hf.device(), "bf16" if hyper.bf16 and hf.device() == "cuda"
                                       else "fp32")
    trainer = build_trainer(model, tokenizer, records, out_dir, hyper, on_log, callbacks)
    started = time.monotonic()
    trainer.train()
    seconds = time.monotonic() - started
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    history = trainer.state.log_history
    return {"loss": hf.curve(history, "loss"), "steps": trainer.state.global_step, "seconds": round(seconds, 2),
            "records": len(records), "hyperparameters": asdict(hyper)}
