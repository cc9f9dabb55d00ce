"""What both trainers share: device choice, common TRL arguments, LoRA, a log callback and curves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LogFn = Callable[[int, int, dict[str, float]], None]  # (step, max_steps, logs)


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def set_threads(cpu_threads: int) -> None:
    """On CPU, fewer torch threads than cores: on a loaded machine 2 threads ran a step 10x slower than 1."""
    import torch

    if cpu_threads > 0 and device() == "cpu":
        torch.set_num_threads(cpu_threads)


def common_args(output_dir: str, bf16: bool, seed: int, gradient_checkpointing: bool) -> dict[str, Any]:
    on_gpu = device() == "cuda"
    return {"output_dir": output_dir, "logging_steps": 1, "save_strategy": "no", "report_to": "none",
            "use_cpu": not on_gpu, "bf16": bf16 and on_gpu, "seed": seed, "disable_tqdm": True,
            "dataloader_num_workers": 0, "gradient_checkpointing": gradient_checkpointing}


def checkpointing_inputs(model: Any, lora: bool, checkpointing: bool) -> None:
    """With LoRA the base is frozen, so the embeddings' output needs no gradient, and a reentrant checkpoint
    recomputed from an input that needs none passes no gradient back to the adapters inside it: make the
    embeddings' output require one (TRL 1.16 does this too; older versions did not, for GRPO)."""
    if checkpointing and (lora or hasattr(model, "peft_config")):
        model.enable_input_require_grads()


def lora_config(rank: int) -> Any:
    if rank <= 0:
        return None
    try:
        from peft import LoraConfig
    except ImportError as err:
        raise RuntimeError("LoRA (lora_rank > 0) needs peft: pip install 'hipforge[lora]'") from err
    return LoraConfig(r=rank, lora_alpha=2 * rank, target_modules="all-linear", task_type="CAUSAL_LM")


def log_callback(on_log: LogFn | None) -> Any:
    from transformers import TrainerCallback

    class _Report(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None,
                   **_: Any) -> None:
            if on_log and logs:
                on_log(state.global_step, state.max_steps, logs)

    return _Report()


def step_timer() -> Any:
    """A callback that keeps each optimizer step's wall time (``.seconds``), generation included for GRPO."""
    import time

    from transformers import TrainerCallback

    class _StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.seconds: list[float] = []
            self.started = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.started = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.seconds.append(round(time.monotonic() - self.started, 3))

    return _StepTimer()


def quiet(trainer: Any) -> Any:
    """Without the printer that writes every log dict to stdout: on_log callbacks report what matters."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


def curve(log_history: list[dict[str, Any]], key: str) -> list[tuple[int, float]]:
    """(step, value) of one logged quantity, e.g. the training loss."""
    return [(int(e["step"]), float(e[key])) for e in log_history if key in e and "step" in e]


def wall_clock(seconds: float, peak_lr: float | None = None, warmup_s: float = 0.0, floor: float = 0.1,
               on_mark: Callable[[int, float], None] | None = None, marks: int = 0,
               whole_steps: bool = False) -> Any:
    """A callback that stops training once ``seconds`` of training time have passed, for runs boxed by the
    clock rather than a step count; with ``whole_steps``, earlier where one more step as long as the last would
    end past them (a GRPO step waits minutes for its rewards; an SFT step is short, and its first one holds
    one-time costs). With ``peak_lr`` it also sets the learning rate by the clock: a linear
    warm-up over ``warmup_s``, then a cosine down to ``floor`` × peak at the end of the box (a step schedule
    cannot know how many steps the box holds). ``on_mark(step, elapsed)`` runs at ``marks`` evenly spaced
    points of the box (a held-out probe); the time it takes is not counted against the box."""
    import math
    import time

    from transformers import TrainerCallback

    class _WallClock(TrainerCallback):
        def __init__(self) -> None:
            self.started = 0.0
            self.paused = 0.0
            self.next_mark = 1
            self.step_ended = 0.0  # elapsed() at the end of the last step

        def elapsed(self) -> float:
            return time.monotonic() - self.started - self.paused

        def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.started, self.step_ended = time.monotonic(), 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, optimizer: Any = None, **_: Any) -> None:
            if peak_lr is None or optimizer is None:
                return
            t = self.elapsed()
            if t < warmup_s:
                lr = peak_lr * max(t / warmup_s, 0.01)
            else:
                progress = min(1.0, (t - warmup_s) / max(seconds - warmup_s, 1e-9))
                lr = peak_lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))
            for group in optimizer.param_groups:
                group["lr"] = lr

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            t = self.elapsed()
            while on_mark and self.next_mark <= marks and t >= seconds * self.next_mark / marks:
                probe = time.monotonic()
                on_mark(state.global_step, round(t, 2))
                self.paused += time.monotonic() - probe
                self.next_mark += 1
            last_step, self.step_ended = t - self.step_ended, t
            if t + (last_step if whole_steps else 0.0) >= seconds:
                control.should_training_stop = True

    return _WallClock()
