"""Steps that wait long for a slot of a concurrency pool (`gpu`, `duckdb`), and who holds the slots.

Dagster's executor says "Step blocked by limit for pool gpu" once, as a DEBUG engine event, then again every 5
minutes; the run stays STARTED with no step running, so it looks hung. The pools sensor (sensors/pool_waits.py)
reads the pools' pending steps and claimed slots, and this module decides which waits to tell about and what to
say: the pool, how long, and which runs and steps hold its slots."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

WARN_AFTER_S = 120.0  # a step waiting longer than this for a slot is told about
FREE_HINT = ("a run that died frees its slots 30 s after it is marked failed; to free them by hand: "
             "Deployment > Concurrency > {pool} in the UI")


def wait_key(run_id: str, step_key: str, pool: str) -> str:
    """Names one step's wait for one pool across sensor ticks (a tab: in neither step keys nor pool names)."""
    return f"{run_id}\t{step_key}\t{pool}"


@dataclass(frozen=True)
class Pending:
    """A step that asked for a slot of `pool` at `since` (epoch seconds); `assigned` once it got one."""

    pool: str
    run_id: str
    step_key: str
    since: float
    assigned: float | None = None

    @property
    def key(self) -> str:
        return wait_key(self.run_id, self.step_key, self.pool)


@dataclass(frozen=True)
class PoolWait:
    pool: str
    run_id: str
    step_key: str
    since: float
    waited_s: float
    limit: int
    holders: tuple[tuple[str, str], ...]  # (run id, step key) of each claimed slot of the pool

    @property
    def key(self) -> str:
        return wait_key(self.run_id, self.step_key, self.pool)

    @property
    def behind_other_runs(self) -> bool:
        """True when another run holds a slot: steps of one run taking turns on a pool is the pools' design."""
        return any(run != self.run_id for run, _ in self.holders) or not self.holders

    def message(self, holder_status: Mapping[str, str] | None = None) -> str:
        status = holder_status or {}
        if self.holders:
            held = ", ".join(f"{'this run' if run == self.run_id else 'run ' + run[:8]}"
                             f"{' (' + status[run] + ')' if run in status and run != self.run_id else ''} "
                             f"step {step}" for run, step in self.holders)
            held = f"held by {held}"
        else:
            held = "no step holds one now" if self.limit else "the pool's limit is 0: no step can run"
        head = (f"Step {self.step_key} has waited {_minutes(self.waited_s)} for a slot of pool '{self.pool}' "
                f"(limit {self.limit}), {held}.")
        return f"{head} It starts when a slot is freed; {FREE_HINT.format(pool=self.pool)}."

    def tag(self) -> str:
        """The run tag's value while it waits: short enough for the run list."""
        behind = sorted({run[:8] for run, _ in self.holders if run != self.run_id})
        return f"{self.pool}: {self.step_key} waiting" + (f" behind run {', '.join(behind)}" if behind else "")


def long_waits(pending: Iterable[Pending], limits: Mapping[str, int],
               holders: Mapping[str, Iterable[tuple[str, str]]], now: float,
               warn_after_s: float = WARN_AFTER_S) -> list[PoolWait]:
    """The steps still without a slot that have waited more than `warn_after_s`, longest first."""
    found = [PoolWait(p.pool, p.run_id, p.step_key, p.since, now - p.since, limits.get(p.pool, 0),
                      tuple(holders.get(p.pool, ()))) for p in pending
             if p.assigned is None and now - p.since > warn_after_s]
    return sorted(found, key=lambda w: -w.waited_s)


def ended_waits(told: Iterable[str], pending: Iterable[Pending], waiting: Iterable[PoolWait]) -> dict[str, str]:
    """Of the waits told about (their keys), those over now, each with what to say: how long it waited when the
    step holds its slot, else that it stopped waiting (its step ended, or its run did)."""
    now_waiting = {w.key for w in waiting}
    assigned = {p.key: p for p in pending if p.assigned is not None}
    over = {}
    for key in told:
        if key in now_waiting:
            continue
        _, step_key, pool = key.split("\t")
        got = assigned.get(key)
        over[key] = (f"Step {step_key} got a slot of pool '{pool}' after waiting {_minutes(got.assigned - got.since)}."
                     if got and got.assigned else f"Step {step_key} no longer waits for a slot of pool '{pool}'.")
    return over


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"
