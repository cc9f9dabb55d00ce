"""The offline auditor as an asset: curated and injected cases through the executor's gate and the
plausibility judge (the offline filter by default), per-case rows in audit_cases, error rates and the
per-class table (attacks caught, honest kernels kept) in the metadata, and a check that fails when the
deterministic gate lets a deceptive kernel through."""


import dagster as dg
from pydantic import Field

from hip_assets.plot_metadata import plot_metadata
from hip_assets.run_links import run_metadata, table
from hipforge.agents.audit import AuditReport, ClassTally, audit_cases, run_audit
from hipforge.agents.factory import make_judge
from hipforge.llm import CallLog, ResponseCache, default_cache_dir
from hipforge.plots import device_name, measured_on, new_figure, to_png
from hipforge.store import Warehouse
from hipforge.store.audit import store_cases
from resources.executor import ExecutorResource
from resources.warehouse import WarehouseResource

GROUP = "audit"


class AuditConfig(dg.Config):
    injected: bool = Field(default=True, description="add honest kernels with injected flaws to the curated corpus")
    judge: str = Field(default="offline", description="plausibility judge: offline, gemini or gemini:<model>")
    judge_threshold: float = Field(default=0.5, description="the judge's pass score")
    llm_base_url: str | None = Field(default=None, description="another endpoint for the Gemini API (a proxy)")
    # off by default: today's evaluator passes most red-team attacks, so the blocking check would fail the run
    redteam: bool = Field(default=False, description="add the red-team attacks and the unusual honest kernels")


def store_report(warehouse: Warehouse, report: AuditReport, run_id: str, backend: str, judge: str) -> int:
    """One audit_cases row per case, stamped with the run (a re-run of the same run replaces its rows)."""
    rows = [(r.case, r.category, r.origin, r.expected_check, backend, r.gate_verdict, r.gate_check, r.gate_passed,
             r.gate_message, judge, r.judge_score, r.judge_passed, r.judge_reasons) for r in report.rows]
    store_cases(warehouse, run_id, rows)
    return len(rows)


def rates_meaning(judge: str) -> str:
    """What the two verifiers' rates measure: a high judge false positive rate is the pre-filter's design."""
    return (f"A false positive rate is the share of incorrect and deceptive cases a verifier passed; a false negative "
            f"rate, the share of correct ones it rejected. The gate is the executor: it compiles, runs and compares "
            f"every candidate, and its verdict is the one the archive keeps. The judge ({judge}) reads the source "
            f"only, before the executor, to keep broken answers and obvious cheats off the device: wrong numerics are "
            f"not its to find, so it passes most incorrect kernels on to the gate by design.")


def class_metadata(classes: list[ClassTally]) -> dict[str, dg.MetadataValue]:
    """caught_<class>: the share of its attacks caught; kept_<class>: the share of its honest kernels kept."""
    meta = {f"caught_{c.name}": dg.MetadataValue.float(c.caught / c.attacks) for c in classes if c.attacks}
    meta.update({f"kept_{c.name}": dg.MetadataValue.float(c.kept / c.honest) for c in classes if c.honest})
    return meta


def rates_table(report: AuditReport) -> dg.MetadataValue:
    """Each verifier's errors per category: false negatives of correct cases, false positives of the others."""
    return table([{"verifier": r.verifier, "category": r.category, "rate_of": r.kind.replace("_", " "),
                   "cases": r.cases, "errors": r.errors, "rate": round(r.rate, 4)} for r in report.rates()])


def classes_table(classes: list[ClassTally]) -> dg.MetadataValue:
    """Per attack class (and all of them): attacks caught, caught by the expected check, honest kernels kept."""
    counts = ("attacks", "caught", "labelled", "by_label", "honest", "kept")
    total = {f: sum(getattr(c, f) for c in classes) for f in counts}
    rows = [{"class": c.name, **{f: getattr(c, f) for f in counts}} for c in classes]
    return table([*rows, {"class": "all", **total}])


def rates_plot(report: AuditReport, measured: str) -> bytes:
    """Grouped bars: each verifier's error rate per category (false negatives for correct cases); `measured`
    names the backend the gate judged on and the judge."""
    rates = report.rates()
    categories = list(dict.fromkeys(r.category for r in rates))
    fig, ax = new_figure(7, 3.2)
    for offset, (verifier, color) in enumerate((("gate", "#264653"), ("judge", "#e9c46a"))):
        values = [next(r.rate for r in rates if r.verifier == verifier and r.category == c) for c in categories]
        ax.bar([i + 0.4 * offset for i in range(len(categories))], values, width=0.4, label=verifier, color=color)
    ax.set_xticks([i + 0.2 for i in range(len(categories))],
                  [f"{c}\n({'false neg.' if c == 'correct' else 'false pos.'})" for c in categories])
    ax.set_ylim(0, 1)
    ax.set_ylabel("error rate")
    ax.set_title(f"verifier audit\n{measured}", fontsize=9)
    ax.legend()
    return to_png(fig)


@dg.asset(group_name=GROUP, kinds={"python", "duckdb"}, pool="gpu")
def verifier_audit(context: dg.AssetExecutionContext, config: AuditConfig, warehouse: WarehouseResource,
                   executor: ExecutorResource) -> dg.MaterializeResult:
    """Correct, incorrect and deceptive candidates with known labels through both verifiers (the executor's
    deterministic gate and the plausibility judge): false positive and negative rates of each."""
    store = warehouse.get()
    cases = audit_cases(injected=config.injected, redteam=config.redteam, backend=executor.backend)
    log = CallLog(store, context.run.run_id, "auditor")
    judge = make_judge(config.judge, config.judge_threshold, ResponseCache(default_cache_dir(), "read_write"), log,
                       config.llm_base_url, agent="auditor")
    context.log.info(f"auditing {len(cases)} cases on the {executor.backend} backend, judged by {judge.name}")
    with log.batch():  # LLM judge calls land in llm_calls in one write
        report = run_audit(cases, executor.evaluate_many, judge)
    stored = store_report(store, report, context.run.run_id, executor.backend, judge.name)
    slipped = report.gate_passed_deceptive()
    return dg.MaterializeResult(metadata={
        "cases": dg.MetadataValue.int(stored),
        "rates": rates_table(report),
        "rates_meaning": dg.MetadataValue.md(rates_meaning(judge.name)),
        "classes": classes_table(report.classes()),
        **class_metadata(report.classes()),
        **plot_metadata(context, store, "rates_plot", rates_plot(report, measured_on(
            executor.backend, device_name(executor.backend, executor.arch), f"judge: {judge.name}")),
            "verifier audit"),
        "gate_false_positive_rate": dg.MetadataValue.float(report.rate("gate", "all")),
        "judge_false_positive_rate": dg.MetadataValue.float(report.rate("judge", "all")),
        "gate_false_negative_rate": dg.MetadataValue.float(report.rate("gate", "correct")),
        "judge_false_negative_rate": dg.MetadataValue.float(report.rate("judge", "correct")),
        "deceptive_passed_by_gate": dg.MetadataValue.json([r.case for r in slipped]),
        "caught_by_another_check": dg.MetadataValue.json({r.case: r.gate_check for r in report.other_check()}),
        **run_metadata(context),
    })
