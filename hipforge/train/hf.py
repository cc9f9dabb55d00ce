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
            "dataloader_num_workers": 0, "gradient_checkpointing": gradient_checkpointing and on_gpu}


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


def curve(log_history: list[dict[str, Any]], key: str) -> list[tuple[int, float]]:
    """(step, value) of one logged quantity, e.g. the training loss."""
    return [(int(e["step"]), float(e[key])) for e in log_history if key in e and "step" in e]
