"""Evaluation pools behind the executor: ``local`` (warm workers on this machine) and ``ray``."""

from __future__ import annotations

import atexit
import json

from hipforge.execution.config import EvalConfig
from hipforge.execution.pool.base import EvalPool

POOLS = ("local", "ray")


def make_pool(kind: str, config: EvalConfig, slots: int | None = None, ray_address: str = "") -> EvalPool:
    """``slots``: evaluations in flight per device (local: default the cores split over the GPUs; ray: 4)."""
    if kind == "local":
        from hipforge.execution.pool.local import LocalPool

        return LocalPool(config, slots=slots)
    if kind == "ray":
        from hipforge.execution.pool.ray_pool import RayPool

        return RayPool(config, address=ray_address or None, slots=slots or 4)
    raise ValueError(f"pool must be one of {', '.join(POOLS)}, not {kind!r}")


_shared: dict[str, EvalPool] = {}


def shared_pool(kind: str, config: EvalConfig, slots: int | None = None, ray_address: str = "") -> EvalPool:
    """One pool per setting for the life of the process: its workers stay warm between calls."""
    key = json.dumps([kind, config.to_dict(), slots, ray_address], sort_keys=True, default=str)
    if key not in _shared:
        _shared[key] = make_pool(kind, config, slots, ray_address)
    return _shared[key]


@atexit.register
def close_all() -> None:
    for pool in _shared.values():
        pool.close()
    _shared.clear()
