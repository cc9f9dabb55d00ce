"""KernelBench report core: both tolerances from one evaluation, per-level scores, the seed table, storage."""

from __future__ import annotations

import dataclasses
import math

import pytest

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Candidate, Declined
from hipforge.agents.runner import StageTask, TaskOutcome
from hipforge.bench.models import OFFLINE, checkpoint_key, resolve_model
from hipforge.bench.report import (
    LOOSE,
    STRICT,
    level_rows,
    library_level,
    load_report_tasks,
    strict_result,
    task_row,
)
from hipforge.bench.report_tables import comparison_markdown, levels_markdown, seed_markdown
from hipforge.bench.reverify import reverify_best
from hipforge.execution.config import EvalConfig
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from hipforge.llm import LLMConfigError
from hipforge.store.reports import latest_levels, previous_levels, save_report
from tests import stored


def timing(ms: float) -> Timing:
    return Timing(ms, ms, ms, 0.0, 5)


def result(verdict: Verdict, speedup: float = 1.0, abs_err: float = 0.0, rel_err: float = 0.0,
           fp32: bool = True) -> EvalResult:
    r = EvalResult(verdict, max_abs_error=abs_err, max_rel_error=rel_err, passes_loose=True if fp32 else None)
    if verdict == Verdict.CORRECT:
        r.runtime, r.ref_eager, r.ref_compiled = timing(1.0), timing(speedup), timing(speedup / 2)
        r.finish_speedups("cuda")
    return r


def outcome(name: str, level: int, res: EvalResult | None, declined: str | None = None) -> TaskOutcome:
    task = StageTask(f"id-{name}", name, "src", "src", level=level)
    candidate = Candidate(f"kernel for {name}", "test") if res else None
    return TaskOutcome(task, candidate, declined, res)


OUTCOMES = [
    outcome("exact", 1, result(Verdict.CORRECT, speedup=2.0)),
    outcome("loose-only", 1, result(Verdict.CORRECT, speedup=0.5, abs_err=3e-3, rel_err=2e-3)),
    outcome("no-compile", 1, result(Verdict.COMPILE_ERROR)),
    outcome("declined", 1, None, declined="unsupported op"),
    outcome("half", 2, result(Verdict.CORRECT, speedup=1.3, abs_err=5e-3, rel_err=5e-3, fp32=False)),
    outcome("wrong", 2, result(Verdict.INCORRECT, abs_err=0.5, rel_err=0.5)),
]


def test_strict_verdict_comes_from_the_kept_errors() -> None:
    rows = {r["task_name"]: r for r in map(task_row, OUTCOMES)}
    assert rows["exact"]["correct_strict"] and rows["exact"]["correct_loose"]
    assert not rows["loose-only"]["correct_strict"] and rows["loose-only"]["correct_loose"]
    assert rows["half"]["correct_strict"]  # no fp32 output: its own tolerance is the same at both
    assert rows["no-compile"]["compiled"] is False and rows["wrong"]["compiled"] is True
    assert rows["declined"]["kernel_id"] is None and rows["declined"]["declined"] == "unsupported op"
    archived = strict_result(OUTCOMES[1].result)
    assert archived.verdict == Verdict.INCORRECT and archived.speedup_eager is None and "1e-4" not in archived.message
    assert "0.01" in archived.message and OUTCOMES[1].result.verdict == Verdict.CORRECT  # the original is untouched


def test_level_rows_score_both_tolerances_over_all_tasks() -> None:
    levels = {(r["level"], r["tolerance"]): r for r in level_rows([task_row(o) for o in OUTCOMES])}
    strict, loose = levels[(1, STRICT)], levels[(1, LOOSE)]
    assert strict["tasks"] == loose["tasks"] == 4
    assert strict["compiled"] == 0.5  # the declined task and the compile error count against it
    assert strict["correct"] == 0.25 and loose["correct"] == 0.5
    assert loose["fast_0_5"] == 0.25 and loose["fast_1"] == 0.25 and loose["fast_2"] == 0.0
    assert math.isclose(loose["geomean_eager"], 1.0) and math.isclose(strict["geomean_eager"], 2.0)
    assert math.isclose(strict["geomean_compiled"], 1.0)
    assert levels[(2, STRICT)]["correct"] == 0.5 and levels[(2, STRICT)]["fast_1_2"] == 0.5


def test_markdown_tables_and_the_seed_comparison() -> None:
    levels = level_rows([task_row(o) for o in OUTCOMES])
    table = levels_markdown(levels)
    assert "| L1 | 0.0001 | 4 | 0.50 | 0.25 |" in table and "fast_1.5" in table
    seed = seed_markdown(levels, "ours")
    assert "| L1 | compiled | 0.50 | 0.50 | 0.10 | 0.48 | 0.71 |" in seed
    assert "| L2 | geomean_eager | 1.300 | 1.300 | - | - | 0.639 |" in seed
    better = [dict(r, correct=r["correct"] + 0.25) for r in levels]
    change = comparison_markdown(levels, better)
    assert "0.25 → 0.50 (+0.25)" in change
    assert comparison_markdown([], levels).startswith("no previous report")


def test_reports_round_trip_and_the_previous_one_is_found(warehouse) -> None:
    rows = [dict(task_row(o), eval_id=None) for o in OUTCOMES]
    levels = level_rows(rows)
    save_report(warehouse, "run-1", OFFLINE, "reference", "cpu", "gfx950", rows, levels)
    assert previous_levels(warehouse, OFFLINE, "reference", "cpu", "run-1") == []
    save_report(warehouse, "run-2", OFFLINE, "reference", "cpu", "gfx950", rows[:2], level_rows(rows[:2]))
    before = previous_levels(warehouse, OFFLINE, "reference", "cpu", "run-2")
    assert {r["run_id"] for r in before} == {"run-1"} and len(before) == 4
    assert previous_levels(warehouse, OFFLINE, "kernelbench", "cpu", "run-2") == []
    latest = latest_levels(warehouse)
    assert list(latest) == [OFFLINE] and {r["run_id"] for r in latest[OFFLINE]} == {"run-2"}
    save_report(warehouse, "run-2", OFFLINE, "reference", "cpu", "gfx950", rows, levels)  # a retry replaces
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM report_tasks WHERE run_id = 'run-2'").fetchone()[0] == len(rows)


def test_every_stored_report_row_says_what_it_measured(warehouse) -> None:
    """Backend, arch, the evaluator's protocol key and the input size go with each task and level row."""
    from hipforge.bench.report_store import record_report
    from hipforge.bench.report_tables import measured_line

    smoke = StageTask("id-small", "small", "full size", "smoke size", level=1)
    outcomes = [TaskOutcome(smoke, Candidate("k", "t"), None, result(Verdict.CORRECT, speedup=2.0)), OUTCOMES[5]]
    spec = resolve_model(OFFLINE, warehouse)
    _, levels = record_report(warehouse, "run-m", spec, "reference", "cpu", "gfx950", outcomes, "proto-1")
    with warehouse.connect() as con:
        tasks = con.execute("SELECT task_name, arch, protocol, size FROM report_tasks ORDER BY ALL").fetchall()
        stored = con.execute("SELECT DISTINCT level, arch, protocol, size FROM report_levels ORDER BY ALL").fetchall()
    assert tasks == [("small", "gfx950", "proto-1", "smoke"), ("wrong", "gfx950", "proto-1", "full")]
    assert stored == [(1, "gfx950", "proto-1", "smoke"), (2, "gfx950", "proto-1", "full")]
    assert measured_line(latest_levels(warehouse)[OFFLINE][0]) == "measured on cpu gfx950, smoke size, protocol proto-1"
    assert levels[0]["protocol"] == "proto-1"


def test_reference_library_stands_in_for_kernelbench() -> None:
    task_set, tasks = load_report_tasks("", [1, 2], 2, "cpu", only=["elementwise/"])
    assert task_set == "reference"
    assert [t.level for t in tasks] == [1, 1, 2, 2]  # first two of each level
    assert all(t.name.startswith("elementwise/") for t in tasks)
    assert tasks[0].eval_source != tasks[0].source  # the cpu backend runs the smoke scale
    assert library_level("blocks", ()) == 3 and library_level("gemm", ("gemm/x",)) == 2
    with pytest.raises(ValueError, match="no reference task"):
        load_report_tasks("", [1], 0, "cpu", only=["no-such-task"])


def test_models_resolve_or_say_what_is_missing(warehouse, monkeypatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert resolve_model(OFFLINE).kind == "offline"
    with pytest.raises(LLMConfigError, match="GEMINI_API_KEY"):
        resolve_model("gemini")
    assert resolve_model("gemini:gemini-2.5-pro", base_url="http://proxy").model == "gemini-2.5-pro"
    with pytest.raises(LLMConfigError, match="base model"):
        resolve_model("baseline")
    assert resolve_model("baseline", base_model="Qwen/Qwen2.5-Coder-14B-Instruct").kind == "transformers"
    with pytest.raises(LLMConfigError, match="unknown report model"):
        resolve_model("gpt")
    stored.checkpoint(warehouse, "ck1", path="/ckpt/sft", base_model="tiny")
    assert resolve_model(checkpoint_key("ck1"), warehouse).model == "/ckpt/sft"
    with pytest.raises(LLMConfigError, match="no checkpoint 'ck2'"):
        resolve_model(checkpoint_key("ck2"), warehouse)


def test_a_declining_translator_is_reported_not_evaluated(tmp_path) -> None:
    from hipforge.bench.report import run_report
    from hipforge.execution.config import EvalConfig
    from hipforge.execution.executor import LocalExecutor

    _, tasks = load_report_tasks("", [1], 2, "cpu", only=["elementwise/"])

    class Refuses:
        name, side_by_side = "refuses", False

        def translate(self, task, verifier):  # noqa: ANN001, ANN202
            if task.task_id == tasks[0].task_id:
                raise RuntimeError("model crashed")
            return Declined(self.name, "no kernel today")

    outcomes = run_report(tasks, Refuses(), LocalExecutor(EvalConfig(cache_dir=str(tmp_path))))
    assert all(o.result is None and o.candidate is None for o in outcomes)
    assert [o.declined for o in outcomes] == ["RuntimeError: model crashed", "no kernel today"]


class _Rerun:
    """The executor's interface, answering with fixed verdicts: what re-verification does with them is tested."""

    backend = "cpu"

    def __init__(self, verdicts: dict[str, Verdict]) -> None:
        self.verdicts, self.seen = verdicts, []

    def evaluate_many(self, items):  # noqa: ANN001, ANN201
        for index, (candidate, task_source) in enumerate(items):
            self.seen.append(task_source)
            yield index, dataclasses.replace(result(self.verdicts[candidate]), backend="cpu")


def test_reverification_flags_changed_verdicts_and_the_archive_drops_them(warehouse) -> None:
    archive = KernelArchive(warehouse)
    rows = [{"task_id": f"t{i}", "name": f"task{i}", "origin": "reference", "source": f"full{i}", "status": "accepted",
             "smoke_source": f"smoke{i}"} for i in (1, 2)]
    warehouse.insert("tasks", rows, "ingest")
    for i in (1, 2, 3):  # task t3 has no stored source: it cannot be re-run
        archive.record(f"t{i}", Candidate(f"k{i}", "test"), dataclasses.replace(result(Verdict.CORRECT), backend="cpu"),
                       "first")
    rerun = _Rerun({"k1": Verdict.CORRECT, "k2": Verdict.INCORRECT})
    found, skipped = reverify_best(warehouse, rerun, "nightly")
    assert skipped == 1 and sorted(rerun.seen) == ["smoke1", "smoke2"]  # cpu runs the smoke scale
    assert [(r["task_id"], r["changed"], r["verdict"]) for r in found] == [("t1", False, "correct"),
                                                                          ("t2", True, "incorrect")]
    assert archive.best("t2", "cpu") is None and archive.best("t1", "cpu") is not None
    with warehouse.connect(read_only=True) as con:
        flagged = con.execute("SELECT task_id, previous_verdict, run_id FROM reverifications WHERE changed").fetchall()
    assert flagged == [("t2", "correct", "nightly")]


def test_roofline_places_correct_kernels_with_flops_per_level(tmp_path, monkeypatch) -> None:
    from hipforge.bench.report_plots import roofline_images
    from hipforge.tasks.library import library_task

    monkeypatch.setenv("HIPFORGE_SANDBOX_CACHE", str(tmp_path))  # the measured CPU peaks are cached here
    gemm = library_task("gemm/matmul_square").source
    relu = library_task("elementwise/relu").source
    outcomes = [
        TaskOutcome(StageTask("g", "L1/matmul", gemm, gemm, level=1), Candidate("k", "t"), None,
                    result(Verdict.CORRECT, speedup=1.5)),
        TaskOutcome(StageTask("r", "L1/relu", relu, relu, level=1), Candidate("k", "t"), None,
                    result(Verdict.CORRECT)),  # no FLOPs in torch's counter: left out, and said so
        TaskOutcome(StageTask("w", "L2/wrong", gemm, gemm, level=2), Candidate("k", "t"), None,
                    result(Verdict.INCORRECT)),  # only correct kernels have a place
    ]
    plots = roofline_images(outcomes, EvalConfig(backend="cpu"))
    assert list(plots) == ["1"] and plots["1"].startswith(b"\x89PNG")
    assert (tmp_path / "peaks.json").exists()
