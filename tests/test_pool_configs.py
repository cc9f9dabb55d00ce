"""The multi-GPU training configs load as accelerate reads them and name what they shard correctly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs" / "accelerate").glob("*.yaml"))


def test_there_is_a_data_parallel_and_a_sharded_config() -> None:
    names = [c.name for c in CONFIGS]
    assert any(n.startswith("ddp_2gpu") for n in names) and any(n.startswith(("fsdp", "zero3")) for n in names)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_accelerate_accepts_the_config(path: Path) -> None:
    from accelerate.commands.config.config_args import ClusterConfig

    config = ClusterConfig.from_yaml_file(str(path))  # unknown keys or bad values raise here
    gpus = int(re.search(r"_(\d+)gpu_", path.name).group(1))
    assert config.num_processes == gpus and config.num_machines == 1
    if config.fsdp_config:
        from transformers import Qwen2ForCausalLM

        wrap = config.fsdp_config["fsdp_transformer_layer_cls_to_wrap"]
        assert wrap in Qwen2ForCausalLM._no_split_modules  # the layer FSDP must find in the 14B (and tiny) model
