"""Dagster sensors and schedules: new task files, new checkpoints, nightly re-evaluation."""
