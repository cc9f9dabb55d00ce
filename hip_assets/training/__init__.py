"""Training: SFT and RL records, the base model and the trained checkpoints."""

import dagster as dg

from hip_assets.training import assets

defs = dg.Definitions(
    assets=[assets.sft_records, assets.rl_records, assets.base_model, assets.sft_checkpoint, assets.rl_checkpoint],
)
