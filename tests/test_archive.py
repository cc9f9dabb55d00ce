"""The archive manager against a throwaway DuckDB: lineage edges, best selection, history, similarity."""

from __future__ import annotations

import pytest

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import Candidate
from hipforge.agents.judge.offline import OfflinePlausibilityFilter
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from tests.corpus import entries

RUN = "run-test"
TASK = "task-relu"


def correct(runtime_ms: float, eager_ms: float = 1.0, backend: str = "cpu") -> EvalResult:
    result = EvalResult(Verdict.CORRECT, "correct on all seeds", backend=backend, phase="done",
                        runtime=Timing.from_samples([runtime_ms] * 3), ref_eager=Timing.from_samples([eager_ms] * 3))
    result.finish_speedups(backend)
    return result


def failed(verdict: Verdict, message: str, **fields) -> EvalResult:
    return EvalResult(verdict, message, backend="cpu", **fields)


def kernel(text: str) -> str:
    """A small candidate whose HIP body is `text`."""
    return f'from torch.utils.cpp_extension import load_inline\nsrc = r"""{text}"""\n' \
           'm = load_inline(name="k", cpp_sources=src, functions=["f"])\n'


@pytest.fixture
def archive(warehouse) -> KernelArchive:
    return KernelArchive(warehouse)


def edges(warehouse, child: str) -> set[tuple[str, str]]:
    with warehouse.connect(read_only=True) as con:
        return set(con.execute("SELECT parent_id, relation FROM lineage_edges WHERE child_id = ?", [child]).fetchall())


def test_record_writes_kernel_evaluation_and_lineage(archive, warehouse) -> None:
    parent, seen = kernel("__global__ void a() {}"), kernel("__global__ void b() {}")
    archive.record(TASK, Candidate(parent, "translator"), correct(2.0), RUN, generation=0)
    archive.record("other", Candidate(seen, "translator"), correct(1.0), RUN)
    child = Candidate(kernel("__global__ void a2() {}"), "optimizer", parents=(kernel_id(parent),),
                      inspirations=(kernel_id(seen),), params={"block": 256})
    report = OfflinePlausibilityFilter().judge(child.source)
    eval_id = archive.record(TASK, child, correct(1.0), RUN, generation=1, plausibility=report, model="m")
    kid = kernel_id(child.source)
    assert edges(warehouse, eval_id) == {(kid, "evaluated_by")}
    assert edges(warehouse, kid) == {(kernel_id(parent), "evolved_from"), (kernel_id(seen), "inspired_by")}
    assert edges(warehouse, kernel_id(parent)) == {(TASK, "translated_from")}  # a first kernel points at its task
    row = archive.history(TASK)[-1]
    assert (row["eval_id"], row["agent"], row["model"], row["generation"]) == (eval_id, "optimizer", "m", 1)
    assert row["parents"] == [kernel_id(parent)] and archive.history(TASK)[0]["parents"] == []
    assert row["detail"]["plausibility"]["checks"] == report.checks and row["detail"]["params"] == {"block": 256}
    assert EvalResult.from_dict(row["detail"]).verdict is Verdict.CORRECT  # detail still reads back as a verdict


def test_record_is_one_transaction(archive, warehouse, monkeypatch) -> None:
    insert = warehouse.insert

    def failing_lineage(table, rows, run_id, on_conflict="keep", con=None):
        if table == "lineage_edges":
            raise RuntimeError("writer died")
        return insert(table, rows, run_id, on_conflict, con)

    monkeypatch.setattr(warehouse, "insert", failing_lineage)
    with pytest.raises(RuntimeError, match="writer died"):
        archive.record(TASK, Candidate(kernel("x"), "optimizer", parents=("p",)), correct(1.0), RUN)
    with warehouse.connect() as con:
        counts = [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("kernels", "evaluations", "lineage_edges")]
    assert counts == [0, 0, 0]


def test_best_is_the_fastest_trusted_correct_kernel(archive) -> None:
    assert archive.best(TASK) is None
    sources = [kernel(f"__global__ void k{i}() {{}}") for i in range(5)]
    archive.record(TASK, Candidate(sources[0], "a"), correct(2.0), RUN)  # 0.5x
    archive.record(TASK, Candidate(sources[1], "a"), correct(0.5, eager_ms=1.0), RUN)  # 2x
    archive.record(TASK, Candidate(sources[2], "a"), correct(0.25, eager_ms=0.5), RUN)  # 2x, faster runtime
    archive.record(TASK, Candidate(sources[3], "a"), failed(Verdict.HACKED, "timing patch", hack_check="timing_patch"),
                   RUN)
    archive.record(TASK, Candidate(sources[4], "a"), correct(0.1), RUN)  # 10x ...
    archive.record(TASK, Candidate(sources[4], "a"), failed(Verdict.INCORRECT, "seed 3: max abs error 0.5"), RUN)
    best = archive.best(TASK)  # ... but it failed a later run: not trusted
    assert best is not None and best["kernel_id"] == kernel_id(sources[2]) and best["speedup_eager"] == 2.0
    assert best["source"] == sources[2]
    archive.record(TASK, Candidate(sources[0], "a"), correct(0.1, backend="cuda"), RUN)
    assert archive.best(TASK, backend="cuda")["kernel_id"] == kernel_id(sources[0])
    assert archive.best(TASK, backend="rocm") is None


def test_per_task_best_has_one_row_per_task(archive) -> None:
    for task, runtimes in (("t1", (1.0, 0.5)), ("t2", (2.0,)), ("t3", ())):
        for i, ms in enumerate(runtimes):
            archive.record(task, Candidate(kernel(f"{task} {i}"), "a"), correct(ms), RUN)
    archive.record("t3", Candidate(kernel("t3 bad"), "a"), failed(Verdict.COMPILE_ERROR, "error"), RUN)
    rows = archive.per_task_best()
    assert [(r["task_id"], r["runtime_ms"]) for r in rows] == [("t1", 0.5), ("t2", 2.0)]
    assert archive.per_task_best(backend="cuda") == []


def test_recent_failures_are_feedback_newest_first(archive) -> None:
    archive.record(TASK, Candidate(kernel("ok"), "a"), correct(1.0), RUN)
    log = "f.hip:3:24: error: use of undeclared identifier 'scale_factor'"
    compile_error = failed(Verdict.COMPILE_ERROR, "build failed", compile_log=log)
    archive.record(TASK, Candidate(kernel("c"), "a"), compile_error, RUN)
    archive.record(TASK, Candidate(kernel("i"), "a"), failed(Verdict.INCORRECT, "seed 3: max abs error 0.02"), RUN)
    archive.record(TASK, Candidate(kernel("t"), "a"), failed(Verdict.TIMEOUT, "check phase did not finish"), RUN)
    feedback = archive.recent_failures(TASK, 2)
    assert [f.verdict for f in feedback] == ["timeout", "incorrect"]
    compile_error = archive.recent_failures(TASK, 5)[-1]
    assert compile_error.source == kernel("c") and compile_error.message == f"build failed\n{log}"


def test_history_lists_every_evaluation_in_order(archive) -> None:
    verdicts = [Verdict.COMPILE_ERROR, Verdict.INCORRECT, Verdict.CORRECT]
    for i, verdict in enumerate(verdicts):
        result = correct(1.0) if verdict is Verdict.CORRECT else failed(verdict, "x")
        archive.record(TASK, Candidate(kernel(str(i)), "a"), result, RUN, generation=i)
    assert [(r["verdict"], r["generation"]) for r in archive.history(TASK)] == [(v.value, i) for i, v in
                                                                               enumerate(verdicts)]


def test_similar_verified_ranks_correct_kernels_by_code_similarity(archive) -> None:
    honest = {e.name: e.candidate_source for e in entries("honest")}
    for name in ("relu", "softmax", "matmul"):
        archive.record(name, Candidate(honest[name], "a"), correct(1.0), RUN)
    archive.record("row_sum", Candidate(honest["row_sum"], "a"), failed(Verdict.INCORRECT, "x"), RUN)
    similar = archive.similar_verified(honest["row_max"], k=2)
    assert [r["task_id"] for r in similar] == ["softmax", "relu"]  # same reduction.hip first; failures never
    assert 0 < similar[1]["similarity"] < similar[0]["similarity"] <= 1
    assert all(r["kernel_id"] != kernel_id(honest["softmax"]) for r in archive.similar_verified(honest["softmax"]))
    assert [r["task_id"] for r in archive.similar_verified(honest["row_max"], task_id="matmul")] == ["matmul"]


def test_the_archive_asset_lists_the_fastest_first_with_the_audit_of_its_gate(archive, warehouse) -> None:
    """kernel_archive reads what verifier_audit stored: each backend's best kernels come with how many attacks the
    latest audit of that backend's gate caught and how many honest kernels it kept."""
    import dagster as dg

    from hip_assets.kernels.assets import kernel_archive
    from hipforge.store.audit import store_cases
    from resources.warehouse import WarehouseResource

    for i, runtime in enumerate((4.0, 0.5, 2.0)):  # speedups 0.25, 2 and 0.5 over a 1 ms eager
        archive.record(f"task-{i}", Candidate(kernel(f"__global__ void k{i}() {{}}"), "translator"), correct(runtime),
                       RUN)

    def case(name: str, category: str, passed: bool) -> tuple:
        return (name, category, "corpus", None, "cpu", "correct" if passed else "hacked", None, passed, "", "offline",
                1.0, True, "")

    resources = {"warehouse": WarehouseResource(path=str(warehouse.path))}
    before = dg.materialize([kernel_archive], resources=resources).asset_materializations_for_node("kernel_archive")
    assert "no audit" in before[0].metadata["gate_audit_cpu"].value
    store_cases(warehouse, "audit-run", [case("a1", "deceptive", False), case("a2", "deceptive", True),
                                         case("h1", "correct", True)])
    [done] = dg.materialize([kernel_archive], resources=resources).asset_materializations_for_node("kernel_archive")
    meta = done.metadata
    assert [r.data["speedup"] for r in meta["best"].value.records] == [2.0, 0.5, 0.25]
    assert meta["gate_audit_cpu"].value == "attacks caught 1 / 2, honest kept 1 / 1 (audit run audit-run)"
    assert meta["gate_attacks_caught_cpu"].value == 0.5
    assert abs(meta["geomean_speedup_cpu"].value - (2.0 * 0.5 * 0.25) ** (1 / 3)) < 1e-3 and "speedups_cpu" in meta


def test_the_archive_asks_for_a_review_of_implausible_speedups(archive, warehouse) -> None:
    """A best kernel over REVIEW_SPEEDUP x eager (more often a hack or a timing artifact) is listed for a human."""
    import dagster as dg

    from hip_assets.kernels.assets import kernel_archive
    from resources.warehouse import WarehouseResource

    for i, runtime in enumerate((0.05, 0.5)):  # speedups 20 and 2 over a 1 ms eager
        archive.record(f"task-{i}", Candidate(kernel(f"__global__ void k{i}() {{}}"), "translator"), correct(runtime),
                       RUN)
    resources = {"warehouse": WarehouseResource(path=str(warehouse.path))}
    [done] = dg.materialize([kernel_archive], resources=resources).asset_materializations_for_node("kernel_archive")
    assert done.metadata["to_review"].value == 1
    [row] = done.metadata["to_review_kernels"].value.records
    assert row.data["task"] == "task-0" and row.data["speedup"] == 20.0
