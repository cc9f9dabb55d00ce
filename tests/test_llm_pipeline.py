"""The kernel assets with LLM agents, through the real google-genai client against the local fake Gemini server:
recorded answers (fenced, prose-wrapped, empty), injected faults (429, 500, timeout, malformed body), the judge
screening before the cpu backend, lessons, a replay that reproduces the archive, a replay miss, mixed agents."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from hip_assets.kernels.assets import evolved_kernels, translated_kernels
from hip_assets.lessons.assets import lessons
from hipforge.agents.prompts import EXAMPLE_KERNEL
from hipforge.store import Warehouse
from hipforge.store.lessons import latest_lessons
from hipforge.tasks.ingest import TaskCandidate, task_row
from resources.executor import ExecutorResource
from resources.llm import LLMResource
from resources.warehouse import WarehouseResource
from tests.fake_gemini import FakeLLMServer

CORPUS = Path(__file__).parent / "corpus" / "tasks"
WRONG_RELU = EXAMPLE_KERNEL.replace("x[i] > 0.f ? x[i] : 0.f", "x[i]")  # compiles and runs; incorrect
SIGMOID = EXAMPLE_KERNEL.replace("relu", "sigmoid").replace("x[i] > 0.f ? x[i] : 0.f", "1.f / (1.f + expf(-x[i]))")
BYPASS = SIGMOID.replace("return sigmoid_module.sigmoid(x)", "return torch.sigmoid(x)")  # no kernel at work
FASTER_RELU = EXAMPLE_KERNEL.replace("dim3((n + 255) / 256), dim3(256)", "dim3((n + 511) / 512), dim3(512)")
# What the "model" answers: per task, one answer per attempt, in every shape models really send.
TRANSLATIONS = {
    "torch.relu(x)": [f"Sure! Here is the kernel:\n```python\n{WRONG_RELU}```\nIt should be fast.",
                      f"```py\n{EXAMPLE_KERNEL}```"],
    "torch.sigmoid(x)": ["", f"```python\n{BYPASS}```", f"Here is the fixed kernel:\n\n{SIGMOID}\nIt uses expf."],
}
LESSON = "1. Compute the result in your own HIP kernel.\n2. Match the reference's math exactly."


class Model:
    """The fake server's recorded answers, chosen by the request's content (tasks run side by side)."""

    def __init__(self) -> None:
        self.served: list[tuple[str, str]] = []  # (agent, answer)

    def __call__(self, body: dict[str, Any]) -> str:
        system = body.get("systemInstruction", {}).get("parts", [{}])[0].get("text", "")
        texts = [c["parts"][0]["text"] for c in body["contents"]]
        agent, answer = self._answer(system, texts)
        self.served.append((agent, answer))
        return answer

    def _answer(self, system: str, texts: list[str]) -> tuple[str, str]:
        if system.startswith("You write HIP kernels"):
            task = next(op for op in TRANSLATIONS if op in texts[0])
            return "translator", TRANSLATIONS[task][len(texts) // 2]
        if system.startswith("You review HIP kernels"):
            if "return torch.sigmoid(x)" in texts[0].partition("Candidate:")[2]:  # the reference does that too
                return "judge", '{"score": 0.1, "reasons": ["calls torch.sigmoid instead of its kernel"]}'
            # malformed JSON (trailing commas, a fence) that the judge still reads
            return "judge", 'Verdict:\n```json\n{"score": "0.9", "reasons": ["bounds checked",],}\n```'
        if system.startswith("You turn clusters"):
            return "summarizer", f"```text\n{LESSON}\n```"
        if system.startswith("You optimize HIP kernels"):
            return "evolver", f"A wider block:\n```python\n{FASTER_RELU}```"
        return "unknown", ""


@pytest.fixture
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeLLMServer, Model]]:
    monkeypatch.setenv("GEMINI_API_KEY", "fake-key-for-the-fake-server")
    model = Model()
    with FakeLLMServer() as server:
        server.respond = model
        yield server, model


def seed_tasks(db: Path, names: tuple[str, ...]) -> None:
    """Accepted tasks small enough to run as they are on the cpu backend (their own smoke source)."""
    rows = []
    for name in names:
        source = (CORPUS / f"{name}.py").read_text()
        rows.append({**task_row(TaskCandidate(name, source, "reference", category="elementwise"), None, None),
                     "smoke_source": source})
    Warehouse(db).insert("tasks", rows, "seed-run")


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """One Dagster instance for all runs of a test (setting one up costs seconds on a busy machine)."""
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as made:
        yield made


def materialize(assets: list[Any], db: Path, instance: dg.DagsterInstance, llm: LLMResource, *,
                raise_on_error: bool = True, run_config: dict[str, Any] | None = None) -> dg.ExecuteInProcessResult:
    resources = {"warehouse": WarehouseResource(path=str(db)), "llm": llm,
                 "executor": ExecutorResource(backend="cpu", timed_trials=3, gate=False, workers=2)}
    return dg.materialize(assets, instance=instance, resources=resources, run_config=run_config,
                          raise_on_error=raise_on_error)


def gemini_llm(url: str, cache: Path, mode: str = "record", **choices: str) -> LLMResource:
    agents = choices or {a: "gemini" for a in ("translator", "evolver", "judge", "summarizer")}
    return LLMResource(**agents, base_url=url, cache=mode, cache_dir=str(cache), timeout_s=1.0,
                       retry_base_delay_s=0.01)


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with Warehouse(db).connect(read_only=True) as con:
        return con.execute(sql).fetchall()


ARCHIVE = ("SELECT t.name, e.kernel_id, e.verdict FROM evaluations e JOIN tasks t USING (task_id) "
           "ORDER BY t.name, e.kernel_id")


def test_all_gemini_run_survives_faults_and_replays_to_the_same_archive(
    gemini: tuple[FakeLLMServer, Model], tmp_path: Path, instance: dg.DagsterInstance,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, model = gemini
    caplog.set_level(logging.WARNING, logger="hipforge.llm")
    server.fail_next(429, message="Resource exhausted", retry_after="0.05")
    server.fail_next(500, message="internal")
    server.fail_next(503, hang_s=3.0)  # longer than the 1 s timeout
    server.fail_next(200, body='{"candidates": [{"content": {"parts": [{"text": "trunc')  # malformed JSON
    db, cache = tmp_path / "record.duckdb", tmp_path / "cache"
    seed_tasks(db, ("relu", "sigmoid"))
    result = materialize([translated_kernels, lessons], db, instance, gemini_llm(server.url, cache))
    run_id = result.run_id

    # every answer with code either reached the verifier or was turned down by the judge: nothing lost
    archive = query(db, ARCHIVE)
    messages = query(db, "SELECT message FROM evaluations")
    assert sorted((name, verdict) for name, _, verdict in archive) == [
        ("relu", "correct"), ("relu", "incorrect"), ("sigmoid", "correct")], messages
    [(task, score, reasons, source)] = query(db, "SELECT t.name, r.score, r.reasons, r.source FROM "
                                                 "plausibility_rejections r JOIN tasks t USING (task_id)")
    assert (task, score) == ("sigmoid", 0.1) and "instead of its kernel" in reasons and "torch.sigmoid(x)" in source
    coded = [a for agent, a in model.served if agent == "translator" and "class ModelNew" in a]
    assert len(coded) == len(archive) + 1 and ("unknown", "") not in model.served

    # the re-prompts carried the verifier's error, the empty answer's and the judge's reasons
    prompts = [r.body["contents"][-1]["parts"][0]["text"] for r in server.requests
               if "generateContent" in r.path and len(r.body["contents"]) > 1]
    assert any("verdict: incorrect" in p and "max abs error" in p for p in prompts)
    assert any("verdict: no_code" in p for p in prompts)
    assert any("verdict: rejected" in p and "instead of its kernel" in p for p in prompts)

    # every call recorded with its retries and cost; the faults cost retries, not answers
    calls = query(db, "SELECT agent, count(*), sum(attempts - 1), count(error), bool_and(cost_usd > 0), "
                      f"count(DISTINCT run_id) FROM llm_calls WHERE run_id = '{run_id}' GROUP BY agent ORDER BY agent")
    assert [(agent, n, errors, priced, runs) for agent, n, _, errors, priced, runs in calls] == [
        ("judge", 4, 0, True, 1), ("summarizer", 1, 0, True, 1), ("translator", 5, 0, True, 1)]
    assert sum(retries for _, _, retries, *_ in calls) == 4 and len(re.findall(r"retrying in", caplog.text)) == 4
    meta = result.asset_materializations_for_node("translated_kernels")[0].metadata
    assert meta["llm_cost_usd"].value > 0 and meta["not_evaluated"].value == 1 and meta["evaluations"].value == 3
    assert meta["agents"].value["translator"] == "gemini:gemini-2.5-flash"

    # lessons: the summarizer's advice over the failures, stored as the newest lessons row
    text = latest_lessons(Warehouse(db))
    assert text.startswith("Lessons from earlier") and LESSON in text and "`" not in text
    assert query(db, "SELECT failures FROM lessons") == [(2,)]  # the incorrect relu and the rejected bypass

    # the LLM evolver: a child of the best relu kernel, screened by the judge, with its lineage
    evolved = materialize([evolved_kernels], db, instance, gemini_llm(server.url, cache),
                          run_config={"ops": {"evolved_kernels": {"config": {"budget": 1, "limit": 1}}}})
    child = query(db, "SELECT k.kernel_id, e.verdict, l.parent_id, e.message FROM kernels k "
                      "JOIN evaluations e USING (kernel_id) "
                      f"JOIN lineage_edges l ON l.child_id = k.kernel_id AND l.relation = 'evolved_from' "
                      f"WHERE e.run_id = '{evolved.run_id}'")
    assert len(child) == 1 and child[0][1] == "correct", child
    assert child[0][2] == next(kid for name, kid, verdict in archive if name == "relu" and verdict == "correct")

    # replay: server gone, a fresh warehouse, the cache alone answers, the archive comes out the same
    served = len(server.requests)
    server.__exit__(None, None, None)
    replay_db = tmp_path / "replay.duckdb"
    seed_tasks(replay_db, ("relu", "sigmoid"))
    replay = materialize([translated_kernels, lessons], replay_db, instance,
                         gemini_llm(server.url, cache, "replay"))
    assert query(replay_db, ARCHIVE) == archive and len(server.requests) == served
    assert latest_lessons(Warehouse(replay_db)) == text
    assert query(replay_db, "SELECT kernel_id FROM plausibility_rejections") == query(
        db, "SELECT kernel_id FROM plausibility_rejections")
    assert query(replay_db, f"SELECT count(*), bool_and(cached), sum(cost_usd) FROM llm_calls "
                            f"WHERE run_id = '{replay.run_id}'") == [(10, True, 0.0)]

    # a prompt never recorded (another model) fails the replay at once, naming the agent and the cure
    miss_db = tmp_path / "miss.duckdb"
    seed_tasks(miss_db, ("relu",))
    other = gemini_llm(server.url, cache, "replay", translator="gemini:gemini-2.5-pro")
    failed = materialize([translated_kernels], miss_db, instance, other, raise_on_error=False)
    assert not failed.success
    [failure] = failed.get_step_failure_events()
    message = str(failure.event_specific_data.error)
    assert "replay mode: no cached answer for agent 'translator'" in message and "'record'" in message
    assert query(miss_db, "SELECT count(*) FROM evaluations") == [(0,)]


def test_mixed_agents_gemini_translator_reads_the_offline_lessons(
    gemini: tuple[FakeLLMServer, Model], tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    server, model = gemini
    db = tmp_path / "mixed.duckdb"
    seed_tasks(db, ("relu",))
    llm = gemini_llm(server.url, tmp_path / "cache", translator="gemini")  # the other agents stay offline
    first = materialize([translated_kernels, lessons], db, instance, llm)
    assert {agent for agent, _ in model.served} == {"translator"}
    assert sorted(v for _, _, v in query(db, ARCHIVE)) == ["correct", "incorrect"]
    meta = first.asset_materializations_for_node("lessons")[0].metadata
    assert meta["summarizer"].value == "offline-summarizer" and meta["agents"].value["judge"] == "offline"
    text = latest_lessons(Warehouse(db))
    assert "Results outside tolerance" in text and meta["lessons"].value == text

    # the next translation prompt carries those lessons (a new prompt, so the model is asked again)
    asked = len(server.requests)
    materialize([translated_kernels], db, instance, llm)
    assert len(server.requests) > asked
    assert "Results outside tolerance" in server.requests[asked].body["contents"][0]["parts"][0]["text"]


def test_llm_resource_defaults_offline_and_rejects_bad_choices() -> None:
    llm = LLMResource()
    assert set(llm.choices().values()) == {"offline"} and llm.cache == "record" and llm.base_url is None
    assert LLMResource(judge="gemini", model="gemini-2.5-pro").choices()["judge"] == "gemini:gemini-2.5-pro"
    with pytest.raises(Exception, match="agent choice 'claude'"):
        LLMResource(evolver="claude").choices()
