"""The offline auditor (agent 8): curated correct, incorrect and deceptive candidates with expected labels
(audit_corpus.py), run through both verifiers (the executor's deterministic gate and the plausibility judge),
with each one's false positive rate (passes a case it should reject) and false negative rate (rejects a correct
one). Every attack has a class; the report counts per class the attacks caught (any verdict but correct) and
the honest kernels kept (correct).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hipforge.agents.audit_corpus import DEFAULT_CORPUS, AuditCase, corpus_cases, injected_cases
from hipforge.agents.judge.offline import OfflinePlausibilityFilter, PlausibilityJudge
from hipforge.execution.verdict import EvalResult, Verdict

CATEGORIES = ("correct", "incorrect", "deceptive")
NO_CLASS = "none"  # honest kernels that use nothing an attack uses
VERIFIERS = ("gate", "judge")
EvaluateMany = Callable[[list[tuple[str, str]]], Iterator[tuple[int, EvalResult]]]


@dataclass(frozen=True)
class AuditRow:
    case: str
    category: str
    origin: str
    expected_check: str | None
    gate_verdict: str
    gate_check: str | None
    gate_message: str
    judge_score: float
    judge_reasons: str
    judge_passed: bool
    attack_class: str | None = None

    @property
    def gate_passed(self) -> bool:
        return self.gate_verdict == Verdict.CORRECT.value

    def passed(self, verifier: str) -> bool:
        return self.gate_passed if verifier == "gate" else self.judge_passed


@dataclass(frozen=True)
class Rate:
    verifier: str
    category: str  # a category, or "all": incorrect and deceptive together (the overall false positive rate)
    kind: str  # false_negative (correct cases) | false_positive (incorrect and deceptive cases)
    cases: int
    errors: int

    @property
    def rate(self) -> float:
        return self.errors / self.cases if self.cases else 0.0


@dataclass(frozen=True)
class ClassTally:
    """One attack class: attacks caught (the gate's verdict is not correct) of all, those caught by the
    check the manifest expects (of the labelled ones), and honest kernels of the class kept correct."""

    name: str
    attacks: int = 0
    caught: int = 0
    labelled: int = 0
    by_label: int = 0
    honest: int = 0
    kept: int = 0


def class_summary(rows: Iterable[AuditRow]) -> list[ClassTally]:
    """Per class, in name order; incorrect cases are neither attacks nor honest and are left out."""
    groups: dict[str, list[AuditRow]] = {}
    for r in rows:
        if r.category in ("deceptive", "correct"):
            groups.setdefault(r.attack_class or NO_CLASS, []).append(r)
    return [_tally(name, group) for name, group in sorted(groups.items())]


def _tally(name: str, rows: list[AuditRow]) -> ClassTally:
    attacks = [r for r in rows if r.category == "deceptive"]
    labelled = [r for r in attacks if r.expected_check]
    honest = [r for r in rows if r.category == "correct"]
    return ClassTally(name, len(attacks), sum(not r.gate_passed for r in attacks), len(labelled),
                      sum(r.gate_check == r.expected_check for r in labelled), len(honest),
                      sum(r.gate_passed for r in honest))


def _total(tallies: list[ClassTally]) -> ClassTally:
    counts = ("attacks", "caught", "labelled", "by_label", "honest", "kept")
    return ClassTally("all", *(sum(getattr(t, f) for t in tallies) for f in counts))


def _frac(part: int, whole: int) -> str:
    return f"{part} / {whole}" if whole else "-"


@dataclass
class AuditReport:
    rows: list[AuditRow] = field(default_factory=list)

    def rates(self) -> list[Rate]:
        found = []
        for verifier in VERIFIERS:
            for category in CATEGORIES:
                found.append(_rate(verifier, category, [r for r in self.rows if r.category == category]))
            found.append(_rate(verifier, "all", [r for r in self.rows if r.category != "correct"]))
        return found

    def rate(self, verifier: str, category: str) -> float:
        return next(r.rate for r in self.rates() if r.verifier == verifier and r.category == category)

    def gate_passed_deceptive(self) -> list[AuditRow]:
        return [r for r in self.rows if r.category == "deceptive" and r.gate_passed]

    def other_check(self) -> list[AuditRow]:
        """Deceptive cases the gate rejected, but by another check than the one expected (worth a look)."""
        return [r for r in self.rows if r.category == "deceptive" and r.expected_check and not r.gate_passed
                and r.gate_check != r.expected_check]

    def classes(self) -> list[ClassTally]:
        return class_summary(self.rows)

    def class_markdown(self) -> str:
        lines = ["| class | attacks caught | by the expected check | honest kept |", "|---|---|---|---|"]
        for c in [*self.classes(), _total(self.classes())]:
            lines.append(f"| {c.name} | {_frac(c.caught, c.attacks)} | {_frac(c.by_label, c.labelled)} | "
                         f"{_frac(c.kept, c.honest)} |")
        return "\n".join(lines)

    def markdown(self) -> str:
        lines = ["| verifier | category | rate of | cases | errors | rate |", "|---|---|---|---|---|---|"]
        lines += [f"| {r.verifier} | {r.category} | {r.kind.replace('_', ' ')} | {r.cases} | {r.errors} | "
                  f"{r.rate:.1%} |" for r in self.rates()]
        return "\n".join(lines)


def audit_cases(root: Path = DEFAULT_CORPUS, injected: bool = True, redteam: bool = False,
                backend: str | None = None) -> list[AuditCase]:
    """The corpus (with the red-team sections when asked) as the backend sees it, then injections into its plain
    honest kernels."""
    cases = corpus_cases(root, redteam, backend)
    honest = (c for c in cases if c.category == "correct" and c.origin == "corpus")
    return cases + (injected_cases(honest) if injected else [])


def run_audit(cases: list[AuditCase], evaluate_many: EvaluateMany, judge: PlausibilityJudge | None = None,
              judge_workers: int = 8) -> AuditReport:
    """Both verifiers on every case: the gate through `evaluate_many` (the executor's) while the judge
    runs beside it on threads (an LLM judge waits on the network, not on the executor)."""
    judge = judge or OfflinePlausibilityFilter()
    with ThreadPoolExecutor(max_workers=max(1, judge_workers)) as pool:
        judged = [pool.submit(judge.judge, c.candidate_source, c.task_source) for c in cases]
        results: dict[int, EvalResult] = dict(evaluate_many([(c.candidate_source, c.task_source) for c in cases]))
        reports = [future.result() for future in judged]
    rows = []
    for i, case in enumerate(cases):
        result, report = results[i], reports[i]
        rows.append(AuditRow(case.name, case.category, case.origin, case.expected_check, result.verdict.value,
                             result.hack_check, result.message[:500], report.score, "; ".join(report.reasons)[:500],
                             report.passed, case.attack_class))
    return AuditReport(rows)


def _rate(verifier: str, category: str, rows: list[AuditRow]) -> Rate:
    """Correct cases can only be wrongly rejected (false negatives), the others only wrongly passed."""
    if category == "correct":
        return Rate(verifier, category, "false_negative", len(rows), sum(not r.passed(verifier) for r in rows))
    return Rate(verifier, category, "false_positive", len(rows), sum(r.passed(verifier) for r in rows))
