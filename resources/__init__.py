"""Dagster resources: thin configurable wrappers around hipforge's core objects."""
