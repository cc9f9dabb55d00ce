"""Training: SFT and RL records from the archive, a base-model factory, TRL SFT, then GRPO with TRLOO
advantages, multi-turn retries, reward smoothing and lessons. torch/transformers/trl are imported lazily."""
