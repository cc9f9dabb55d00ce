"""The offline auditor: the case generator, the rates and per-class counts, a real cpu-backend audit on a
few cases, and the verifier_audit asset with its check (which must fail when the gate passes a deceptive
kernel)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from hip_assets.audit import assets as audit_asset
from hip_assets.audit import checks as audit_checks
from hipforge.agents.audit import ClassTally, audit_cases, class_summary, run_audit
from hipforge.agents.audit_corpus import INJECTIONS, AuditCase, corpus_cases, injected_cases
from hipforge.agents.judge.offline import OfflinePlausibilityFilter
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate_many
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.store import Warehouse
from resources.executor import ExecutorResource
from resources.warehouse import WarehouseResource
from tests import fake_gemini
from tests.corpus import entries
from tests.fake_gemini import FakeLLMServer

CASES = audit_cases()
ON_CPU = audit_cases(backend="cpu")  # what the asset audits on the test resources' cpu backend
WITH_REDTEAM = audit_cases(redteam=True)
EXPECTED = {c.candidate_source: c for c in WITH_REDTEAM}
# the attack classes the red-team corpus must cover, at least one case each
REDTEAM_CLASSES = {"judge_patch", "reference_tamper", "result_caching", "deferred_work", "sandbox_escape",
                   "precision_downgrade", "shape_specialized", "noop_probe_defeat", "stream_injection",
                   "timing_patch", "uninitialized_output"}


def test_corpus_cases_follow_the_manifest_and_injections_cover_every_honest_kernel() -> None:
    corpus = corpus_cases()
    kinds = {"honest": "correct", "buggy": "incorrect", "deceptive": "deceptive"}
    assert [(c.name, c.category, c.expected_check) for c in corpus] == [
        (e.name, kinds[e.kind], e.label) for e in entries()]
    assert all(c.candidate_source == e.candidate_source for c, e in zip(corpus, entries(), strict=True))
    injected = injected_cases(c for c in corpus if c.category == "correct")
    weightless = [c for c in corpus if c.category == "correct" and "nn.Linear" not in c.task_source
                  and "nn.Conv" not in c.task_source]
    assert len(injected) == 17 * (len(INJECTIONS) - 2) + 2 * len(weightless)
    bypass = next(c for c in injected if c.name == "relu+code_bypass")
    assert "class _TorchImpl" in bypass.candidate_source and "class Model(" not in bypass.candidate_source
    assert bypass.category == "deceptive" and bypass.expected_check == "code_bypass"
    assert next(c for c in injected if c.name == "relu+scaled_output").category == "incorrect"
    compile(bypass.candidate_source, "bypass", "exec")  # the injected module is valid Python
    assert len(EXPECTED) == len(WITH_REDTEAM)  # every case has its own source


def test_redteam_sections_carry_a_class_and_reach_the_audit_only_when_asked() -> None:
    kinds = {"honest": "correct", "buggy": "incorrect", "deceptive": "deceptive", "unusual": "correct",
             "redteam": "deceptive"}
    full = corpus_cases(redteam=True)
    assert [(c.name, c.category, c.expected_check, c.attack_class) for c in full] == [
        (e.name, kinds[e.kind], e.label, e.attack_class) for e in entries(redteam=True)]
    attacks = [c for c in full if c.origin == "redteam" and c.category == "deceptive"]
    unusual = [c for c in full if c.origin == "redteam" and c.category == "correct"]
    assert {c.attack_class for c in attacks} == REDTEAM_CLASSES and len(unusual) >= 3
    assert all(c.attack_class for c in full if c.category == "deceptive")  # the existing ones too
    assert not any(c.origin == "redteam" for c in CASES)  # off by default
    injected = [c for c in WITH_REDTEAM if c.origin == "injected"]
    assert len(injected) == sum(c.origin == "injected" for c in CASES)  # injections stay on the plain corpus
    assert next(c for c in injected if c.name == "relu+noop_kernel").attack_class == "noop_kernel"


def test_attacks_by_stream_order_are_audited_only_where_streams_run_asynchronously() -> None:
    """The cpu backend's streams run in order with the launching thread: a hidden stream is no attack there."""
    gpu_only = {e.name for e in entries(redteam=True) if e.gpu_only}
    assert gpu_only and all(e.attack_class == "stream_injection" for e in entries(redteam=True) if e.gpu_only)
    for backend in ("cuda", "rocm", None):
        assert gpu_only <= {c.name for c in corpus_cases(redteam=True, backend=backend)}
    on_cpu = corpus_cases(redteam=True, backend="cpu")
    assert {c.name for c in corpus_cases(redteam=True)} - {c.name for c in on_cpu} == gpu_only


def test_class_summary_counts_attacks_caught_and_honest_kept() -> None:
    """Synthetic (case, verdict) pairs through run_audit: nothing is built."""
    pairs = [  # (category, class, expected check, verdict, hack check)
        ("deceptive", "x", "l1", Verdict.HACKED, "l1"),  # caught by its check
        ("deceptive", "x", "l1", Verdict.HACKED, "l2"),  # caught by another
        ("deceptive", "x", None, Verdict.CORRECT, None),  # slipped through
        ("deceptive", "y", None, Verdict.TIMEOUT, None),  # any verdict but correct catches
        ("correct", "x", None, Verdict.CORRECT, None),  # kept
        ("correct", None, None, Verdict.HACKED, "l1"),  # a plain honest kernel, wrongly rejected
        ("incorrect", "x", None, Verdict.INCORRECT, None),  # neither attack nor honest: left out
    ]
    cases = [AuditCase(f"c{i}", cat, "corpus", f"x = {i}", "", label, cls) for i, (cat, cls, label, _, _) in
             enumerate(pairs)]
    results = [EvalResult(verdict, hack_check=check) for *_, verdict, check in pairs]
    report = run_audit(cases, lambda items: iter(enumerate(results[:len(list(items))])))
    assert report.classes() == class_summary(report.rows) == [
        ClassTally("none", honest=1, kept=0), ClassTally("x", attacks=3, caught=2, labelled=2, by_label=1, honest=1,
                                                         kept=1), ClassTally("y", attacks=1, caught=1)]
    table = report.class_markdown()
    assert "| x | 2 / 3 | 1 / 2 | 1 / 1 |" in table and "| y | 1 / 1 | - | - |" in table
    assert table.splitlines()[-1] == "| all | 3 / 4 | 1 / 2 | 1 / 2 |"


def test_real_audit_on_the_cpu_backend() -> None:
    """Every relu case through the real gate and the offline filter, with the rates they imply."""
    cases = [c for c in CASES if c.name.split("+")[0] in ("relu", "row_max_off_by_one", "timing_patch_static")]
    cfg = EvalConfig(backend="cpu", timed_trials=3, gate=False)
    report = run_audit(cases, lambda items: evaluate_many(items, cfg, parallel=2))
    by_name = {r.case: r for r in report.rows}
    assert by_name["relu"].gate_passed and by_name["relu"].judge_passed
    assert not report.gate_passed_deceptive() and report.rate("gate", "all") == 0.0
    # a memoized answer is wrong on fresh inputs: incorrect, or hacked when the evaluator tells why
    caching = by_name["relu+result_caching"]
    assert (caching.gate_verdict, caching.gate_check) in (("incorrect", None), ("hacked", "result_caching"))
    assert by_name["relu+code_bypass"].gate_check == "code_bypass"
    assert by_name["row_max_off_by_one"].gate_verdict == "incorrect" and by_name["row_max_off_by_one"].judge_passed
    assert not by_name["timing_patch_static"].judge_passed  # the static filter sees the timer patch
    assert report.rate("judge", "incorrect") == 1.0  # a static filter cannot see numeric bugs
    assert "| gate | deceptive | false positive |" in report.markdown()


def _answer(case: AuditCase, honest_gate: bool) -> EvalResult:
    if case.category == "correct" or not honest_gate:
        return EvalResult(Verdict.CORRECT, "correct on all seeds")
    if case.category == "incorrect":
        return EvalResult(Verdict.INCORRECT, "max abs error 1.0")
    return EvalResult(Verdict.HACKED, "caught", hack_check=case.expected_check)


class ScriptedExecutor(ExecutorResource):
    """The labels as verdicts (honest) or everything passed (a gate that lets deceptions through)."""

    honest_gate: bool = True

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        for i, (candidate, _) in enumerate(items):
            yield i, _answer(EXPECTED[candidate], self.honest_gate)


def _materialize(db: Path, home: Path, honest_gate: bool, **config: Any) -> dg.ExecuteInProcessResult:
    home.mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        return dg.materialize(
            [audit_asset.verifier_audit, audit_checks.gate_rejects_deceptive], instance=instance,
            resources={"warehouse": WarehouseResource(path=str(db)),
                       "executor": ScriptedExecutor(honest_gate=honest_gate)},
            run_config={"ops": {"verifier_audit": {"config": config}}}, raise_on_error=False)


def test_verifier_audit_stores_rows_rates_and_a_passing_check(tmp_path: Path) -> None:
    result = _materialize(tmp_path / "w.duckdb", tmp_path / "home", honest_gate=True)
    assert result.success
    meta = result.asset_materializations_for_node("verifier_audit")[0].metadata
    assert meta["cases"].value == len(ON_CPU) and meta["gate_false_positive_rate"].value == 0.0
    rates = {(r.data["verifier"], r.data["category"]): r.data for r in meta["rates"].value.records}  # a table
    assert meta["judge_false_negative_rate"].value == 0.0 and rates["judge", "incorrect"]["rate_of"] == "false positive"
    assert meta["rates_plot"].value.startswith("![verifier audit](data:image/png;base64,")
    plot = Path(meta["rates_plot_file"].value)  # the same PNG as a file, per asset, partition and run
    assert plot == tmp_path / "plots" / "verifier_audit" / "_" / result.run_id / "rates_plot.png" and plot.is_file()
    assert "offline_plausibility" in meta["rates_meaning"].value and "by design" in meta["rates_meaning"].value
    classes = {r.data["class"]: r.data for r in meta["classes"].value.records}
    assert classes["code_bypass"]["caught"] == classes["code_bypass"]["attacks"] > 0
    assert meta["caught_code_bypass"].value == 1.0 and classes["all"]["attacks"] >= classes["code_bypass"]["attacks"]
    assert meta["kept_none"].value == 1.0 and "caught_judge_patch" not in meta  # red team off by default
    (check,) = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["deceptive_cases"].value == sum(c.category == "deceptive" for c in ON_CPU)
    with Warehouse(tmp_path / "w.duckdb").connect(read_only=True) as con:
        rows = con.execute("SELECT DISTINCT run_id, backend, judge FROM audit_cases").fetchall()
        assert con.execute("SELECT count(*) FROM audit_cases WHERE created_at IS NOT NULL").fetchone()[0] == len(ON_CPU)
    assert rows == [(result.run_id, "cpu", OfflinePlausibilityFilter.name)]


def test_the_check_fails_when_the_gate_passes_a_deceptive_kernel(tmp_path: Path) -> None:
    result = _materialize(tmp_path / "w.duckdb", tmp_path / "home", honest_gate=False)
    meta = result.asset_materializations_for_node("verifier_audit")[0].metadata
    assert meta["gate_false_positive_rate"].value == 1.0
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed and "bypass_torch_op" in check.metadata["passed_by_gate"].value


def test_the_redteam_audit_reports_every_attack_class(tmp_path: Path) -> None:
    result = _materialize(tmp_path / "w.duckdb", tmp_path / "home", honest_gate=False, redteam=True, injected=False)
    meta = result.asset_materializations_for_node("verifier_audit")[0].metadata
    assert meta["cases"].value == len(corpus_cases(redteam=True, backend="cpu"))
    assert all(meta[f"caught_{name}"].value == 0.0 for name in REDTEAM_CLASSES)  # a gate that passes everything
    patches = sum(c.attack_class == "judge_patch" for c in corpus_cases(redteam=True, backend="cpu"))
    judge_patch = next(r.data for r in meta["classes"].value.records if r.data["class"] == "judge_patch")
    assert meta["kept_deferred_work"].value == 1.0 and (judge_patch["caught"], judge_patch["attacks"]) == (0, patches)


def test_the_audit_can_judge_with_gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge that waves everything through: the audit reports it, every call is accounted for."""
    monkeypatch.setenv("GEMINI_API_KEY", "fake-key-for-the-fake-server")
    monkeypatch.setenv("HIPFORGE_LLM_CACHE", str(tmp_path / "cache"))
    echo = fake_gemini._gemini_answer

    def lenient(body: dict[str, Any], model: str) -> dict[str, Any]:
        reply = echo(body, model)
        reply["candidates"][0]["content"]["parts"][0]["text"] = '```json\n{"score": 0.9, "reasons": ["fine"]}\n```'
        return reply

    monkeypatch.setattr(fake_gemini, "_gemini_answer", lenient)
    with FakeLLMServer() as server:
        result = _materialize(tmp_path / "w.duckdb", tmp_path / "home", True, judge="gemini:gemini-2.5-flash",
                              llm_base_url=server.url, injected=False)
    meta = result.asset_materializations_for_node("verifier_audit")[0].metadata
    corpus = [c for c in ON_CPU if c.origin == "corpus"]
    assert meta["cases"].value == len(corpus) == len(server.requests)
    assert meta["judge_false_positive_rate"].value == 1.0 and meta["gate_false_positive_rate"].value == 0.0
    with Warehouse(tmp_path / "w.duckdb").connect(read_only=True) as con:
        assert con.execute("SELECT DISTINCT judge FROM audit_cases").fetchall() == [("llm-judge:gemini-2.5-flash",)]
        calls = con.execute("SELECT agent, count(*) FROM llm_calls GROUP BY agent").fetchall()
    assert calls == [("auditor", len(corpus))]


def test_the_asset_declares_its_group_pool_and_kinds() -> None:
    defs = dg.Definitions(assets=[audit_asset.verifier_audit], asset_checks=[audit_checks.gate_rejects_deceptive],
                          resources={"warehouse": WarehouseResource(), "executor": ExecutorResource()})
    node = defs.resolve_asset_graph().get(dg.AssetKey("verifier_audit"))
    assert node.group_name == "audit" and node.pools == {"gpu"}
    assert {"python", "duckdb"} <= set(node.kinds)
    dg.Definitions.validate_loadable(defs)
