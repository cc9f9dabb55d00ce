"""The LLM path of every mode, answered by an OfflineProvider with canned (and messy) answers: no network."""

from __future__ import annotations

from hipforge.llm import CallLog, LLMClient, LLMRequest, OfflineProvider, extract_code
from hipforge.store import Warehouse
from hipforge.tasks.library import load_library
from hipforge.tasks.synth import MODES, OPERATORS, SeedTask, SynthConfig, draft, synthesize, write_with_llm
from hipforge.tasks.synth.generate import SYSTEM

SEEDS = [SeedTask(t.name, t.source) for t in load_library()]
REFUSAL = "I am sorry, but I cannot write that module."


def messy(mode: str, code: str) -> str:
    """How models actually answer: prose around fences, a draft inside <think>, or no fence at all."""
    if mode == "composition":
        return f"Sure! Here is the composed module:\n\n```python\n{code}\n```\n\nEach operator is used once."
    if mode == "mutation":
        return (
            f"<think>First try:\n```python\nclass Model: pass\n```</think>\nThe variant:\n```\n{code}\n```\n"
            "I changed the operator mix."
        )
    return f"Implementation below.\n\n{code}"


def canned(drafts: dict[str, tuple[str, str]], refuse: set[str]):
    """An answer function: each known prompt gets its draft's offline module, wrapped the mode's messy way."""

    def answer(request: LLMRequest) -> str:
        assert request.turns()[0].content == SYSTEM
        mode, code = drafts[request.turns()[-1].content]
        return REFUSAL if request.turns()[-1].content in refuse else messy(mode, code)

    return answer


def _drafts(count: int) -> list:
    return [draft(mode, 0, i, SEEDS) for mode in MODES for i in range(count)]


def test_prompts_carry_the_library_the_seed_or_the_spec() -> None:
    composition, mutation, constraint = (draft(mode, 0, 0, SEEDS) for mode in MODES)
    assert all(op.name in composition.prompt and op.doc in composition.prompt for op in OPERATORS)
    seed = next(s for s in SEEDS if s.task_id == mutation.parents[0])
    assert seed.source in mutation.prompt
    assert constraint.spec and constraint.spec in constraint.prompt


def test_llm_answers_are_extracted_from_fences_and_prose() -> None:
    drafts = _drafts(2)
    provider = OfflineProvider(canned({d.prompt: (d.mode, d.source) for d in drafts}, set()), model="canned")
    written = write_with_llm(drafts, provider)
    for before, after in zip(drafts, written, strict=True):
        assert after.via == "canned" and after.source == extract_code(
            messy(before.mode, before.source), "python", marker="class Model"
        )
        assert after.source.strip() == before.source.strip()  # the fences, prose and <think> draft are gone
        assert (after.parents, after.operators, after.spec) == (before.parents, before.operators, before.spec)


def test_llm_path_end_to_end_keeps_provenance_and_stores_a_refusal(warehouse: Warehouse) -> None:
    drafts = _drafts(4)
    refused = next(d for d in drafts if d.mode == "constraint")
    answer = canned({d.prompt: (d.mode, d.source) for d in drafts}, {refused.prompt})
    client = LLMClient(
        OfflineProvider(answer, model="canned"), log=CallLog(warehouse, "run-llm", "task_generator")
    )
    summary = synthesize(SynthConfig(counts={mode: 2 for mode in MODES}), SEEDS, warehouse, "run-llm", client)
    assert all(c["accepted"] == 2 for c in summary.per_mode().values()), summary.rejections()
    assert all(o.candidate.via == "canned" for o in summary.outcomes)
    with warehouse.connect(read_only=True) as con:
        row = con.execute(
            "SELECT status, reject_code, source FROM tasks WHERE name = ?", [refused.name]
        ).fetchone()
        relations = dict(con.execute("SELECT relation, count(*) FROM lineage_edges GROUP BY 1").fetchall())
        calls = con.execute("SELECT count(*) FROM llm_calls WHERE agent = 'task_generator'").fetchone()[0]
    assert row[:2] == ("rejected", "syntax_error") and row[2] == REFUSAL
    assert relations["mutated_from"] >= 2 and relations["composed_of"] >= 4 and relations["inspired_by"] >= 2
    assert calls == len(summary.outcomes)
