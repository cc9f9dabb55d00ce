"""Ingest stores every task: accepted ones with their smoke run, bad ones as rejected with the reason."""

from __future__ import annotations

from hipforge.store import Warehouse
from hipforge.tasks.ingest import TaskCandidate, ingest_tasks
from tests.test_task_model import GOOD, make_task

BAD = {
    "syntax": ("class Model(:\n", "syntax_error"),
    "no_model": ("import torch\ndef get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n",
                 "missing_model"),
    "raises": (make_task("raise ValueError('boom')"), "forward_error"),
    "nan": (make_task("return x / 0.0 * 0.0"), "non_finite_output"),
    "not_tensor": (make_task("return 3"), "non_tensor_output"),
}


def test_batch_with_bad_tasks_keeps_good_ones_and_stores_reasons(warehouse: Warehouse) -> None:
    batch = [TaskCandidate("good", GOOD, "file")] + [TaskCandidate(n, s, "file") for n, (s, _) in BAD.items()]
    summary = ingest_tasks(batch, warehouse, run_id="run-ingest")
    assert (summary.accepted, summary.rejected) == (1, len(BAD))
    with warehouse.connect(read_only=True) as con:
        rows = dict(
            (name, (status, code, reason))
            for name, status, code, reason in con.execute(
                "SELECT name, status, reject_code, reject_reason FROM tasks WHERE run_id = 'run-ingest'"
            ).fetchall()
        )
    assert rows["good"][:2] == ("accepted", None)
    for name, (_, code) in BAD.items():
        status, stored_code, reason = rows[name]
        assert (status, stored_code) == ("rejected", code), (name, reason)
        assert reason, f"{name} was rejected without a reason"
    assert "boom" in rows["raises"][2] and "line" in rows["syntax"][2]


def test_a_failed_write_loses_nothing_already_stored(warehouse: Warehouse, monkeypatch) -> None:
    ingest_tasks([TaskCandidate("good", GOOD, "file")], warehouse, run_id="run-1")
    original = Warehouse.insert

    def dying_insert(self, table, rows, run_id, on_conflict="keep", con=None):
        if table == "lineage_edges":
            raise RuntimeError("disk full")
        return original(self, table, rows, run_id, on_conflict, con)

    monkeypatch.setattr(Warehouse, "insert", dying_insert)
    composite = TaskCandidate("composite", make_task("return torch.relu(x) * 2"), "file", composed_of=("good",))
    parts = [TaskCandidate("good", GOOD, "file"), composite]
    try:
        ingest_tasks(parts, warehouse, run_id="run-2")
    except RuntimeError as err:
        assert "disk full" in str(err)
    with warehouse.connect(read_only=True) as con:
        assert con.execute("SELECT name, run_id FROM tasks").fetchall() == [("good", "run-1")]
