"""LLM agents on scripted models: the translator's retry loop (offline, real cpu evaluation, fake Gemini),
the evolver's selection math and duplicate rejection, the judge's parsing, the summarizer, the factory."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hipforge.agents.archive import KernelArchive
from hipforge.agents.base import AgentTask, Candidate, Declined
from hipforge.agents.evolver.llm import LLMEvolver
from hipforge.agents.evolver.offline import OfflineEvolver
from hipforge.agents.evolver.selection import near_duplicate, normalize, pick_parent, selection_weights
from hipforge.agents.factory import build_agents
from hipforge.agents.judge.llm import LLMPlausibilityJudge, parse_verdict
from hipforge.agents.judge.offline import OfflinePlausibilityFilter
from hipforge.agents.prompts import EXAMPLE_KERNEL, EXAMPLE_TASK, feedback_from
from hipforge.agents.summarizer.llm import LLMSummarizer
from hipforge.agents.summarizer.offline import Failure, OfflineSummarizer
from hipforge.agents.translator.llm import LLMTranslator
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.llm import LLMClient, LLMConfigError, LLMRequest, OfflineProvider
from hipforge.store import Warehouse
from tests import fake_gemini
from tests.fake_gemini import FakeLLMServer
from tests.verifiers import LOG, ScriptedVerifier

TASK = AgentTask("t-relu", "relu", EXAMPLE_TASK)
WRONG = EXAMPLE_KERNEL.replace("x[i] > 0.f ? x[i] : 0.f", "x[i]")  # identity: compiles, runs, incorrect


def scripted(answers: list[str]) -> tuple[LLMClient, list[LLMRequest]]:
    """A client answering from the list in order, and the requests it saw."""
    seen: list[LLMRequest] = []

    def answer(request: LLMRequest) -> str:
        seen.append(request)
        return answers[min(len(seen), len(answers)) - 1]

    return LLMClient(OfflineProvider(answer, model="scripted")), seen


def test_translator_reprompts_with_the_error_and_stops_at_the_first_correct() -> None:
    messy = f"Sure! Here is the kernel:\n```python\n{WRONG}```\nIt should be fast."
    client, seen = scripted([messy, f"```py\n{EXAMPLE_KERNEL}\n```", "never asked"])
    verifier = ScriptedVerifier(Verdict.COMPILE_ERROR, Verdict.CORRECT)
    made = LLMTranslator(client).translate(TASK, verifier)
    assert isinstance(made, Candidate) and len(seen) == 2 and len(verifier.given) == 2
    assert verifier.given[0].source.strip() == WRONG.strip()  # prose and fences stripped before evaluation
    second = seen[1].turns()
    assert "Example answer" in second[0].content and second[1].content.count("class Model(") == 1
    assert second[2].role == "assistant" and second[2].content.strip() == WRONG.strip()
    assert "verdict: compile_error" in second[3].content and LOG in second[3].content
    assert made is verifier.given[1] and made.params["attempt"] == 2
    assert [h["verdict"] for h in made.params["history"]] == ["compile_error"]


def test_translator_gives_up_after_max_attempts_with_the_last_candidate_and_history() -> None:
    client, seen = scripted(["no code here, sorry", WRONG, WRONG + "\n# v2\n", WRONG + "\n# v3\n"])
    verifier = ScriptedVerifier(Verdict.INCORRECT)
    made = LLMTranslator(client, max_attempts=4, lessons="1. Keep fp32.").translate(TASK, verifier)
    assert len(seen) == 4 and len(verifier.given) == 3  # the prose answer was not evaluated
    assert [c.params["attempt"] for c in verifier.given] == [2, 3, 4]
    assert isinstance(made, Candidate) and "# v3" in made.source
    assert [h["verdict"] for h in made.params["history"]] == ["no_code", "incorrect", "incorrect"]
    assert "1. Keep fp32." in seen[0].turns()[1].content
    assert len(seen[3].turns()) == 1 + 1 + 2 * 3  # system, task, then every earlier attempt and its feedback


def test_feedback_names_the_hack_check_and_keeps_the_log_tail() -> None:
    hacked = feedback_from("src", EvalResult(Verdict.HACKED, "PyTorch computes the result", hack_check="code_bypass"))
    assert hacked.message.startswith("caught by the code_bypass check: PyTorch computes")
    long_log = "noise\n" * 1000 + LOG
    failed = feedback_from("src", EvalResult(Verdict.COMPILE_ERROR, "build failed", compile_log=long_log))
    assert failed.message.endswith(LOG) and "first error" not in failed.message and len(failed.message) < 1600
    buried = LOG + "\n" + "note: in instantiation\n" * 1000
    failed = feedback_from("src", EvalResult(Verdict.COMPILE_ERROR, "build failed", compile_log=buried))
    assert f"first error: {LOG}" in failed.message


def test_translator_declines_when_no_answer_holds_code() -> None:
    client, _ = scripted(["I cannot do that."])
    outcome = LLMTranslator(client, max_attempts=2).translate(TASK, ScriptedVerifier(Verdict.CORRECT))
    assert isinstance(outcome, Declined)
    assert "no candidate reached the verifier in 2 answers" in outcome.reason


def test_translator_loop_on_the_real_cpu_backend() -> None:
    """The worked example of the system prompt is itself a correct kernel on our cpu backend."""
    task = (Path(__file__).parent / "corpus" / "tasks" / "relu.py").read_text()
    client, seen = scripted([f"```python\n{WRONG}```", f"Fixed:\n```python\n{EXAMPLE_KERNEL}```"])
    cfg = EvalConfig(backend="cpu", timed_trials=3, gate=False)
    verifier = ScriptedVerifier(judge=lambda source: evaluate(source, task, cfg))
    made = LLMTranslator(client).translate(AgentTask("relu", "relu", task), verifier)
    assert [r.verdict for r in verifier.results] == [Verdict.INCORRECT, Verdict.CORRECT], verifier.results
    assert made is verifier.given[-1] and len(seen) == 2
    assert "max abs error" in seen[1].turns()[-1].content


@pytest.fixture
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeLLMServer, list[str]]]:
    """The fake Gemini server answering from a script instead of echoing."""
    monkeypatch.setenv("GEMINI_API_KEY", "fake-key-for-the-fake-server")
    script: list[str] = []
    echo = fake_gemini._gemini_answer

    def answer(body: dict[str, Any], model: str) -> dict[str, Any]:
        reply = echo(body, model)
        reply["candidates"][0]["content"]["parts"][0]["text"] = script.pop(0)
        return reply

    monkeypatch.setattr(fake_gemini, "_gemini_answer", answer)
    with FakeLLMServer() as server:
        yield server, script


def test_translator_through_fake_gemini_reprompts_with_the_error(gemini: tuple[FakeLLMServer, list[str]]) -> None:
    server, script = gemini
    script += [f"```python\n{WRONG}```", EXAMPLE_KERNEL]
    agents = build_agents({"translator": "gemini:gemini-2.5-flash"}, base_url=server.url)
    candidate = agents.translator.translate(TASK, ScriptedVerifier(Verdict.COMPILE_ERROR, Verdict.CORRECT))
    assert isinstance(candidate, Candidate) and candidate.source.strip() == EXAMPLE_KERNEL.strip()
    assert len(server.requests) == 2 and "generateContent" in server.requests[1].path
    body = server.requests[1].body
    assert "Example answer" in body["systemInstruction"]["parts"][0]["text"]
    roles = [c["role"] for c in body["contents"]]
    assert roles == ["user", "model", "user"]
    assert LOG in body["contents"][2]["parts"][0]["text"] and "relu" in body["contents"][1]["parts"][0]["text"]


def test_evolver_through_fake_gemini(gemini: tuple[FakeLLMServer, list[str]]) -> None:
    server, script = gemini
    faster = EXAMPLE_KERNEL.replace("dim3(256)", "dim3(512)").replace("/ 256", "/ 512")
    script += [f"Here:\n```python\n{faster}```"]
    agents = build_agents({"evolver": "gemini"}, base_url=server.url, budget=1)
    start = (Candidate(EXAMPLE_KERNEL, "seed"), _correct(1.0))
    run = agents.evolver.evolve(TASK, start, ScriptedVerifier(Verdict.CORRECT))
    assert len(server.requests) == 1 and "gemini-2.5-flash" in server.requests[0].path
    assert "Parent kernel" in server.requests[0].body["contents"][0]["parts"][0]["text"]
    assert run.nodes[-1].candidate.parents == (kernel_id(EXAMPLE_KERNEL),)


def test_selection_weights_follow_the_sigmoid_of_the_score_relative_to_the_median() -> None:
    low, mid, high = selection_weights([1.0, 2.0, 3.0], [0, 0, 0], lam=1.0)
    assert mid == pytest.approx(0.5) and low == pytest.approx(1 / (1 + 2.718281828**1))
    assert high == pytest.approx(1 - low)
    # fewer children: the same score with 3 children weighs a quarter
    assert selection_weights([2.0, 2.0], [0, 3]) == pytest.approx([0.5, 0.125])
    assert selection_weights([-1e6, 1e6], [0, 0]) == pytest.approx([0.0, 1.0])  # no overflow
    rng = random.Random(0)
    picks = [pick_parent([2.0, 2.0], [0, 3], rng) for _ in range(4000)]
    assert picks.count(0) / len(picks) == pytest.approx(0.8, abs=0.03)
    with pytest.raises(ValueError):
        selection_weights([1.0], [0, 1])


def test_near_duplicates_ignore_comments_and_whitespace() -> None:
    reformatted = EXAMPLE_KERNEL.replace("    ", "\t").replace("// ", "//! ") + "\n# tuned\n"
    assert near_duplicate(reformatted, [EXAMPLE_KERNEL]) == 1.0
    undocumented = EXAMPLE_KERNEL.replace('"""ReLU in one HIP kernel."""', "")
    assert near_duplicate(undocumented, [WRONG, EXAMPLE_KERNEL], threshold=0.95) >= 0.95
    renamed = EXAMPLE_KERNEL.replace("relu_hip", "relu_hip_v2")
    assert near_duplicate(renamed, [EXAMPLE_KERNEL]) is not None  # the default threshold
    tuned = EXAMPLE_KERNEL.replace("255) / 256), dim3(256)", "511) / 512), dim3(512)")  # text ratio 0.996
    assert near_duplicate(tuned, [EXAMPLE_KERNEL], threshold=0.5) is None  # new constants: a real child
    unchecked = EXAMPLE_KERNEL.replace('TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu: float32 only");', "")
    assert near_duplicate(unchecked, [EXAMPLE_KERNEL]) is None  # same constants, text ratio under 0.99
    assert near_duplicate(EXAMPLE_KERNEL, []) is None
    kept = "#include <x.h> #define BLOCK 256 int a;"
    assert normalize("#include <x.h>\n#define BLOCK 256  // tuned\nint a; # py note") == kept


def _correct(speedup: float) -> EvalResult:
    return EvalResult(Verdict.CORRECT, "correct on all seeds", backend="cpu", speedup_eager=speedup)


def test_evolver_rejects_duplicates_and_records_parents_and_inspirations(tmp_path: Path) -> None:
    archive = KernelArchive(Warehouse(tmp_path / "w.duckdb"))
    elsewhere = EXAMPLE_KERNEL.replace("relu_hip", "relu_hip_other")
    archive.record("t-other", Candidate(elsewhere, "test"), _correct(1.5), "run-1")
    archive.record("t-relu", Candidate(WRONG, "test"), EvalResult(Verdict.INCORRECT, "max abs error 1.2"), "run-1")
    faster = EXAMPLE_KERNEL.replace("dim3(256)", "dim3(1024)").replace("/ 256", "/ 1024")
    client, seen = scripted([f"```python\n{EXAMPLE_KERNEL}  \n# same\n```", f"Try this:\n```python\n{faster}```"])
    verifier = ScriptedVerifier(Verdict.CORRECT)
    evolver = LLMEvolver(client, archive, OfflinePlausibilityFilter(), budget=1)
    run = evolver.evolve(TASK, (Candidate(EXAMPLE_KERNEL, "seed"), _correct(1.0)), verifier)
    assert len(seen) == 2 and len(verifier.given) == 1 and verifier.given[0].source.strip() == faster.strip()
    assert run.rejected and "near-duplicate" in run.rejected[0][1] and verifier.skipped == [run.rejected[0][1]]
    assert verifier.generations == [1]
    child = run.nodes[-1].candidate
    assert child.parents == (kernel_id(EXAMPLE_KERNEL),) and kernel_id(elsewhere) in child.inspirations
    prompt = seen[0].turns()[-1].content
    assert "A similar verified kernel" in prompt and "max abs error 1.2" in prompt and "Parent kernel" in prompt
    assert run.nodes[0].children == 1 and run.nodes[-1].generation == 1


def test_evolver_lets_the_judge_reject_before_evaluation() -> None:
    client, _ = scripted(["```python\nclass ModelNew:\n    pass\n```"])
    verifier = ScriptedVerifier(Verdict.CORRECT)
    run = LLMEvolver(client, judge=OfflinePlausibilityFilter(), budget=2).evolve(
        TASK, (Candidate(EXAMPLE_KERNEL, "seed"), _correct(1.0)), verifier)
    assert not verifier.given and len(run.rejected) == 6 and run.rejected[-1][1].startswith("plausibility 0")
    assert len(verifier.rejected) == 6 and not verifier.skipped


@pytest.mark.parametrize(("text", "expected"), [
    ('{"score": 0.8, "reasons": ["coalesced"]}', (0.8, ["coalesced"])),
    ('Here you go:\n```json\n{"score": "0.35", "reasons": ["no bounds check",],}\n```', (0.35, ["no bounds check"])),
    ('I think {"note": 1} then {"score": 1, "reasons": "fine"}', (1.0, ["fine"])),
    ("score: 0.6 (it misses the tail)", (0.6, [])),
    ('{"score": 7, "reasons": []}', None),
    ("looks good to me", None),
])
def test_judge_parses_messy_answers(text: str, expected: tuple[float, list[str]] | None) -> None:
    assert parse_verdict(text) == expected


def test_judge_fails_clearly_on_an_unparseable_answer() -> None:
    client, seen = scripted(["Looks plausible!"])
    report = LLMPlausibilityJudge(client, threshold=0.5).judge(EXAMPLE_KERNEL, EXAMPLE_TASK)
    assert not report.passed and report.score == 0.0 and "no score" in report.reasons[0]
    assert "Reference:" in seen[0].turns()[-1].content
    good, _ = scripted(['{"score": 0.9, "reasons": ["ok"]}'])
    assert LLMPlausibilityJudge(good).judge(EXAMPLE_KERNEL).passed


def test_summarizer_turns_clusters_into_lessons() -> None:
    failures = [Failure("compile_error", "build failed", LOG)] * 3 + [Failure("incorrect", "max abs error 0.3")]
    client, seen = scripted(["```text\n1. Declare every kernel before launching it.\n2. Accumulate in fp32.\n```"])
    text = LLMSummarizer(client).lessons(failures)
    assert text.startswith("Lessons from earlier") and "Declare every kernel" in text and "`" not in text
    assert "3x compile_error" in seen[0].turns()[-1].content
    empty, _ = scripted([""])
    assert LLMSummarizer(empty).lessons(failures) == OfflineSummarizer().lessons(failures)
    assert LLMSummarizer(client).lessons([]) == ""


def test_build_agents_mixes_offline_and_gemini() -> None:
    agents = build_agents({"judge": "gemini:gemini-2.5-pro", "summarizer": "gemini"})
    assert isinstance(agents.judge, LLMPlausibilityJudge) and agents.judge.client.model == "gemini-2.5-pro"
    assert isinstance(agents.summarizer, LLMSummarizer) and agents.summarizer.client.model == "gemini-2.5-flash"
    assert isinstance(agents.evolver, OfflineEvolver) and agents.translator.name == "offline-translator"
    assert isinstance(build_agents({}).judge, OfflinePlausibilityFilter)
    with pytest.raises(LLMConfigError):
        build_agents({"translator": "claude"})
    with pytest.raises(LLMConfigError):
        build_agents({"optimizer": "gemini"})
