"""A fingerprint of the offline translator's output over KernelBench: one sha256 per problem and one digest.

Each problem's full-size source goes through the offline translator with its default code-generation
choices; a kernel fingerprints as the sha256 of the candidate source, a decline as the sha256 of its
reason (and an exception, which the translator should never raise, as the sha256 of its type and message).
The digest covers every problem's name, outcome and hash, so two runs with the same digest translated
every problem byte for byte alike. Use it to show that a refactor of the translator changed nothing.
Usage:
    python scripts/translator_fingerprint.py --source KB.jsonl --out before.json
    python scripts/translator_fingerprint.py --source KB.jsonl --expect before.json   # exit 1 on any change
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from hipforge.agents.base import AgentTask, Candidate
from hipforge.agents.translator.offline import OfflineTranslator
from hipforge.bench.kernelbench import KernelBenchProblem, load_kernelbench


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint(problem: KernelBenchProblem) -> dict[str, str]:
    """The outcome of translating one problem (kernel, declined or error) and the sha256 of its text."""
    try:
        outcome = OfflineTranslator().translate(AgentTask(problem.task_name, problem.task_name, problem.source), [])
    except Exception as exc:  # noqa: BLE001 - recorded, so that a change in what raises shows too
        return {"outcome": "error", "sha256": sha256(f"{type(exc).__name__}: {exc}")}
    if isinstance(outcome, Candidate):
        return {"outcome": "kernel", "sha256": sha256(outcome.source)}
    return {"outcome": "declined", "sha256": sha256(outcome.reason)}


def digest(problems: dict[str, dict[str, str]]) -> str:
    """One sha256 over every problem's name, outcome and hash, in name order."""
    lines = (f"{name}\t{p['outcome']}\t{p['sha256']}\n" for name, p in sorted(problems.items()))
    return sha256("".join(lines))


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Task names whose fingerprint differs, or that only one of the two runs has."""
    old, new = before["problems"], after["problems"]
    return sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="KernelBench: a .jsonl file, a directory or a dataset id")
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--out", type=Path, help="write the fingerprint here as JSON")
    parser.add_argument("--expect", type=Path, help="an earlier fingerprint: exit 1 unless this one is identical")
    args = parser.parse_args()
    problems = load_kernelbench(args.source, [int(x) for x in args.levels.split(",")])
    per_problem = {p.task_name: fingerprint(p) for p in problems}
    outcomes: dict[str, int] = {}
    for p in per_problem.values():
        outcomes[p["outcome"]] = outcomes.get(p["outcome"], 0) + 1
    result = {"problems": per_problem, "count": len(per_problem), "outcomes": outcomes,
              "digest": digest(per_problem)}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"{result['count']} problems {outcomes} digest {result['digest']}")
    if args.expect:
        changed = differences(json.loads(args.expect.read_text()), result)
        for name in changed:
            print(f"changed: {name}", file=sys.stderr)
        print("identical" if not changed else f"{len(changed)} problems changed")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
