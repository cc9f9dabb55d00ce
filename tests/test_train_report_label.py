"""A report of a checkpoint trained with the embedded preset labels its scores as that preset's and points to the
measured GPU table, so a tiny CPU model's zeros are never read as the method's result."""

from __future__ import annotations

from hipforge.bench.models import checkpoint_key
from hipforge.bench.report_store import checkpoint_preset
from hipforge.bench.report_tables import GPU_TABLE, checkpoint_note, model_label
from tests import stored


def test_the_preset_recorded_with_a_checkpoint_labels_its_report(warehouse) -> None:
    for cid, hyper in (("ck-emb", {"preset": "embedded", "max_steps": 60}), ("ck-old", {"max_steps": 60}),
                       ("ck-seed", {"preset": "seed"})):
        stored.checkpoint(warehouse, cid, hyperparameters=hyper)
    embedded, old, seed = (checkpoint_key(c) for c in ("ck-emb", "ck-old", "ck-seed"))
    assert checkpoint_preset(warehouse, embedded) == "embedded"
    assert checkpoint_preset(warehouse, old) is None and checkpoint_preset(warehouse, "offline-agents") is None
    note = checkpoint_note(embedded, "embedded")
    assert note and "embedded preset's scores" in note and "not the method's result" in note and GPU_TABLE in note
    assert model_label(embedded, "embedded") == f"{embedded} (embedded preset)"
    assert GPU_TABLE in (checkpoint_note(seed, "seed") or "") and model_label(seed, "seed") == seed
    assert checkpoint_note("offline-agents", None) is None and model_label("offline-agents", None) == "offline-agents"
