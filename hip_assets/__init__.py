"""Dagster software-defined assets of the hipforge pipeline; domain logic lives in hipforge/."""
