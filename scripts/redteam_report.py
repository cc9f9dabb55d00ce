"""The corpus's attacks and honest kernels through the evaluator, with the audit's per-class table.

Runs the deceptive and red-team attacks and the honest and unusual honest kernels of tests/corpus
(manifest.toml), prints one row per case (verdict, check, speedup, message) and then attacks caught /
total and honest kernels kept / total per attack class. Usage:
    python scripts/redteam_report.py                                   # cpu backend
    python scripts/redteam_report.py --backend cuda --arch sm_90       # on a GPU machine
    python scripts/redteam_report.py --only redteam,unusual --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hipforge.agents.audit import AuditReport, run_audit  # noqa: E402
from hipforge.agents.audit_corpus import AuditCase, corpus_cases  # noqa: E402
from hipforge.execution.config import EvalConfig  # noqa: E402
from hipforge.execution.evaluate import evaluate_many  # noqa: E402
from hipforge.execution.verdict import EvalResult  # noqa: E402

GROUPS = {"honest": ("correct", "corpus"), "deceptive": ("deceptive", "corpus"),
          "unusual": ("correct", "redteam"), "redteam": ("deceptive", "redteam")}


def select(groups: list[str], names: set[str], backend: str) -> list[AuditCase]:
    wanted = {GROUPS[g] for g in groups}
    return [c for c in corpus_cases(redteam=True, backend=backend) if (c.category, c.origin) in wanted
            and (not names or c.name in names)]


def report(cases: list[AuditCase], cfg: EvalConfig, parallel: int, rows: Path | None = None
           ) -> tuple[AuditReport, dict[int, EvalResult]]:
    """Every case through the evaluator; with ``rows``, each row appended there as it comes (a run cut short by
    its box keeps what it judged)."""
    results: dict[int, EvalResult] = {}

    def evaluate(items: list[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        for i, result in evaluate_many(items, cfg, parallel=parallel):
            results[i] = result
            check = f" ({result.hack_check})" if result.hack_check else ""
            print(f"  {cases[i].name} [{cases[i].category}]: {result.verdict.value}{check}", file=sys.stderr,
                  flush=True)
            if rows:
                with rows.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row(cases[i], result)) + "\n")
            yield i, result

    return run_audit(cases, evaluate), results


def case_table(cases: list[AuditCase], audit: AuditReport, results: dict[int, EvalResult]) -> str:
    lines = ["| case | class | expected | verdict | check | speedup | message |", "|---|---|---|---|---|---|---|"]
    for i, (case, row) in enumerate(zip(cases, audit.rows, strict=True)):
        speedup = results[i].speedup_eager
        message = row.gate_message.replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {case.name} | {case.attack_class or '-'} | {case.category} | {row.gate_verdict} | "
                     f"{row.gate_check or '-'} | {f'{speedup:.2f}x' if speedup else '-'} | {message} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--arch", default="gfx950")
    parser.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated groups of {', '.join(GROUPS)}")
    parser.add_argument("--names", default="", help="comma-separated case names (default: every case)")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--timed-trials", type=int, default=None)
    parser.add_argument("--gate", action="store_true", help="run the gfx950 compile gate too")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    cases = select(args.only.split(","), set(filter(None, args.names.split(","))), args.backend)
    if not cases:
        parser.error("no case matches --only/--names")
    cfg = EvalConfig(backend=args.backend, arch=args.arch, gate=args.gate, timed_trials=args.timed_trials)
    print(f"{len(cases)} cases on the {args.backend} backend", file=sys.stderr)
    audit, results = report(cases, cfg, args.parallel, args.json.with_suffix(".jsonl") if args.json else None)
    print(case_table(cases, audit, results))
    print()
    print(audit.class_markdown())
    if args.json:
        args.json.write_text(json.dumps([row(cases[i], results[i]) for i in range(len(cases))], indent=1))


def row(c: AuditCase, r: EvalResult) -> dict[str, object]:
    return {"case": c.name, "class": c.attack_class, "category": c.category, "origin": c.origin,
            "verdict": r.verdict.value, "hack_check": r.hack_check, "message": r.message,
            "speedup_eager": r.speedup_eager, "runtime_ms": r.runtime and r.runtime.typical_ms(r.backend),
            "ref_eager_ms": r.ref_eager and r.ref_eager.typical_ms(r.backend), "integrity": r.integrity,
            "output_tail": r.output_tail[-2000:]}


if __name__ == "__main__":
    main()
