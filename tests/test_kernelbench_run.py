"""scripts/kernelbench_run.py's bookkeeping (hipforge/bench/run_summary.py): a level resumed across calls, its
committed summary rows, and the --param parsing. (Its GPU runs themselves take minutes per level; the
translator and evaluator have their tests.)"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from hipforge.bench.run_summary import StoredResult, result_row, resumed, write_results
from hipforge.execution.verdict import Verdict
from scripts.kernelbench_run import gen_params

EARLIER = {
    "meta": {"device": "NVIDIA H100 80GB HBM3"},
    "tasks": {
        "L2/1_a": {"verdict": "correct", "speedup": 1.2, "speedup_compiled": 1.1, "evolved_speedup": 1.5,
                   "evolved_speedup_compiled": 1.3},
        "L2/2_b": {"verdict": "runtime_error", "speedup": None, "speedup_compiled": None},
        "L2/3_c": {"declined": "unsupported op: lstm"},
        "L2/4_d": {},  # not evaluated before the earlier call's box ended: runs again
        "L2/9_other": {"verdict": "correct", "speedup": 2.0, "speedup_compiled": 2.0},  # not in this run's tasks
    },
}


def test_resume_keeps_finished_verdicts_and_runs_the_rest(tmp_path: Path):
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(EARLIER))
    done, translated, evolved, earlier = resumed(path, {"L2/1_a", "L2/2_b", "L2/3_c", "L2/4_d"})
    assert set(done) == {"L2/1_a", "L2/2_b", "L2/3_c"} and earlier == {"tasks": 3, "device": "NVIDIA H100 80GB HBM3"}
    assert translated["L2/1_a"] == StoredResult(Verdict.CORRECT, 1.2, 1.1)
    assert evolved["L2/1_a"] == StoredResult(Verdict.CORRECT, 1.5, 1.3)  # evolution's best, where it ran
    assert evolved["L2/2_b"] == translated["L2/2_b"] and "L2/3_c" not in translated  # a decline stays a decline
    path.write_text(json.dumps({"tasks": EARLIER["tasks"]}))  # a file from before --out carried its meta
    assert resumed(path, {"L2/1_a"})[3]["device"] == "not recorded in the earlier call's file"


def test_rerun_drops_the_matching_verdicts_from_a_resume(tmp_path: Path):
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(EARLIER))
    done, translated, _, earlier = resumed(path, {"L2/1_a", "L2/2_b", "L2/3_c"}, rerun="L2/(2|3)_")
    assert set(done) == set(translated) == {"L2/1_a"} and earlier["tasks"] == 1


def test_rows_count_every_task_of_the_level():
    """Declined, failed and never-run tasks are not correct; geomeans are over the correct ones."""
    by_name = {n: SimpleNamespace(level=2) for n in ("a", "b", "c", "d")} | {"e": SimpleNamespace(level=1)}
    table = {"a": StoredResult(Verdict.CORRECT, 2.0, 0.5), "b": StoredResult(Verdict.CORRECT, 0.5, 2.0),
             "c": StoredResult(Verdict.INCORRECT, None, None), "e": StoredResult(Verdict.CORRECT, 3.0, None)}
    row = result_row("best", table, by_name, 2)
    assert row["n"] == 4 and row["correct"] == 0.5 and row["fast_1"] == 0.25
    assert math.isclose(row["geomean_eager"], 1.0) and math.isclose(row["geomean_compiled"], 1.0)
    assert row["faster_than_compiled"] == 0.25
    level1 = result_row("best", table, by_name, 1)  # nothing timed under torch.compile: no compiled columns
    assert level1["geomean_compiled"] is None and level1["faster_than_compiled"] is None


def test_results_keep_the_other_levels_rows(tmp_path: Path):
    path = tmp_path / "results.json"
    write_results(path, {"device": "A"}, [{"level": 1, "stage": "best"}], [1])
    write_results(path, {"device": "B"}, [{"level": 2, "stage": "translated"}, {"level": 2, "stage": "best"}], [2])
    write_results(path, {"device": "C"}, [{"level": 2, "stage": "best"}], [2])  # a level's rerun replaces it
    kept = json.loads(path.read_text())
    assert kept["rows"] == [{"level": 1, "stage": "best"}, {"level": 2, "stage": "best"}]
    assert kept["meta"] == {"L1": {"device": "A"}, "L2": {"device": "C"}}


def test_params_are_parsed_by_their_fields_type():
    params = gen_params(["gemm_engine=mma", "split_k=4", "fast_math=yes", "gemm_epilogue=fused"])
    assert (params.gemm_engine, params.split_k, params.fast_math, params.gemm_epilogue) == ("mma", 4, True, "fused")
    for bad, why in (("tile=1", "expected NAME=VALUE"), ("split_k=many", "split_k must be of type int"),
                     ("gemm_engine=tf32", "gemm_engine must be one of simt, mma")):
        with pytest.raises(SystemExit, match=why):
            gen_params([bad])
