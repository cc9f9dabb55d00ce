"""A KernelBench report for one model: the model writes a kernel per task, each is evaluated once, and
KernelBench's scores come out per level at both fp32 tolerances.

Evaluations run at KernelBench v0's loose fp32 tolerance (1e-2), so every kernel correct there is also
timed; the strict verdict (1e-4, KernelBench today) is judged from the kept max abs/rel errors,
conservatively: within atol or within rtol everywhere implies allclose. No Dagster or DuckDB here (the
GPU script runs this module alone).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hipforge.agents.base import AgentTask, Candidate, Declined, Translator, Verifier
from hipforge.agents.runner import Progress, StageRunner, StageTask, TaskOutcome
from hipforge.bench.kernelbench import load_kernelbench
from hipforge.bench.scoring import FAST_P, TaskScore, geomean_speedup, summary
from hipforge.execution.config import LOOSE_FP32, EvalConfig
from hipforge.execution.executor import Executor
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult, Verdict

STRICT, LOOSE = 1e-4, LOOSE_FP32[0]
TOLERANCES = (STRICT, LOOSE)


def fast_column(p: float) -> str:
    return f"fast_{p:g}".replace(".", "_")


def library_level(category: str, composed_of: tuple[str, ...]) -> int:
    """KernelBench's levels for our library: blocks are architectures (L3), a task combining others is a
    fusion (L2), the rest are single operators (L1)."""
    return 3 if category == "blocks" else 2 if composed_of else 1


def load_report_tasks(source: str, levels: list[int], limit: int, backend: str,
                      only: list[str] | None = None) -> tuple[str, list[StageTask]]:
    """("kernelbench", problems) from a KernelBench source; ("reference", the library) when none is given.
    `only` keeps tasks whose name contains one of its strings; then limit > 0 keeps the first of each level."""
    from hipforge.tasks import smoke_sources, task_id
    from hipforge.tasks.library import load_library

    if source:
        task_set = "kernelbench"
        named = [(p.task_name, p.level, p.source) for p in load_kernelbench(source, levels)]
    else:
        task_set = "reference"
        named = [(t.name, library_level(t.category, t.composed_of), t.source) for t in load_library()]
    named = [t for t in named if t[1] in levels and (not only or any(part in t[0] for part in only))]
    if limit > 0:
        named = [t for lvl in sorted({t[1] for t in named}) for t in [x for x in named if x[1] == lvl][:limit]]
    if not named:
        raise ValueError(f"no {task_set} task matches levels {levels} and names {only or 'any'}")
    smoke = smoke_sources([(name, src) for name, _, src in named]) if backend == "cpu" else {}
    tasks = [StageTask(task_id(src), name, src, smoke.get(name, src), f"L{level}", level) for name, level, src in named]
    return task_set, tasks


def report_config(base: EvalConfig) -> EvalConfig:
    """The executor's protocol with fp32/fp64 outputs compared at the loose tolerance (strict is judged later)."""
    return dataclasses.replace(base, tolerances={**base.tolerances, "float32": LOOSE_FP32, "float64": LOOSE_FP32})


@dataclass
class Forgiving:
    """A report's translator: one model failure (an LLM error, a crash) declines its task, not the report."""

    inner: Translator

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def side_by_side(self) -> bool:
        return self.inner.side_by_side

    def translate(self, task: AgentTask, verifier: Verifier) -> Candidate | Declined:
        try:
            return self.inner.translate(task, verifier)
        except Exception as err:  # noqa: BLE001
            return Declined(self.inner.name, f"{type(err).__name__}: {str(err)[:300]}")


def run_report(tasks: list[StageTask], translator: Translator, executor: Executor,
               on_progress: Progress | None = None) -> list[TaskOutcome]:
    """A kernel per task from the model, each evaluated once; the executor compares fp32 at the loose
    tolerance (see report_config)."""
    return StageRunner(executor).translate(tasks, Forgiving(translator), on_progress)


def strict_ok(result: EvalResult) -> bool:
    """Would the kernel pass at 1e-4? Only fp32 outputs differ between the tolerances (passes_loose is set
    only for them); the max errors bound every element, so either bound suffices."""
    if result.passes_loose is None:
        return True
    return any(err is not None and err <= STRICT for err in (result.max_abs_error, result.max_rel_error))


def task_row(outcome: TaskOutcome) -> dict[str, Any]:
    """One report_tasks row (without the run, model and task set)."""
    result, correct = outcome.result, outcome.result is not None and outcome.result.verdict == Verdict.CORRECT
    return {
        "task_id": outcome.task.task_id, "task_name": outcome.task.name, "level": outcome.task.level,
        "kernel_id": kernel_id(outcome.candidate.source) if outcome.candidate else None,
        "declined": outcome.declined, "verdict": result.verdict.value if result else None,
        "compiled": result is not None and result.verdict != Verdict.COMPILE_ERROR,
        "correct_strict": correct and strict_ok(result),  # type: ignore[arg-type]
        "correct_loose": correct,
        "max_abs_err": result.max_abs_error if result else None,
        "max_rel_err": result.max_rel_error if result else None,
        "speedup_eager": result.speedup_eager if correct else None,
        "speedup_compiled": result.speedup_compiled if correct else None,
    }


def _scores(rows: list[dict[str, Any]], correct_column: str, baseline: str) -> list[TaskScore]:
    return [TaskScore(r["task_name"], r["compiled"], r[correct_column], r[f"speedup_{baseline}"]) for r in rows]


def level_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per level and tolerance: compile and correct rates, fast_p over eager, geomean over eager and compile."""
    out = []
    for level in sorted({r["level"] for r in rows}):
        mine = [r for r in rows if r["level"] == level]
        for tolerance in TOLERANCES:
            column = "correct_strict" if tolerance == STRICT else "correct_loose"
            s = summary(_scores(mine, column, "eager"))
            out.append({
                "level": level, "tolerance": tolerance, "tasks": len(mine), "compiled": s["compiled"],
                "correct": s["correct"], **{fast_column(p): s[f"fast_{p:g}"] for p in FAST_P},
                "geomean_eager": s["geomean"], "geomean_compiled": geomean_speedup(_scores(mine, column, "compiled")),
            })
    return out


def strict_result(result: EvalResult) -> EvalResult:
    """The verdict at KernelBench's 1e-4, which the archive keeps: correct only at 1e-2 is incorrect there."""
    if result.verdict != Verdict.CORRECT or strict_ok(result):
        return result
    message = (f"correct at fp32 tolerance {LOOSE:g} only: max abs error {result.max_abs_error:.3g}, "
               f"max rel error {result.max_rel_error:.3g}, both above {STRICT:g}")
    return dataclasses.replace(result, verdict=Verdict.INCORRECT, message=message, speedup_eager=None,
                               speedup_compiled=None)
