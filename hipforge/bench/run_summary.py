"""A KernelBench run's verdicts as scores and as the committed summary's rows (scripts/kernelbench_run.py), and
a level resumed from an earlier call's per-task detail (a level may not fit one call's time box)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from hipforge.bench.scoring import TaskScore, summary
from hipforge.execution.verdict import Verdict


def score(name: str, result, over: str = "eager") -> TaskScore:  # noqa: ANN001
    if result is None:  # declined
        return TaskScore(name, False, False, None)
    verdict = result.verdict.value
    speedup = result.speedup_eager if over == "eager" else result.speedup_compiled
    return TaskScore(name, verdict != "compile_error", verdict == "correct", speedup)


@dataclass
class StoredResult:
    """A verdict an earlier call of scripts/kernelbench_run.py wrote to its --out, scored as if judged now."""
    verdict: Verdict
    speedup_eager: float | None
    speedup_compiled: float | None


def resumed(path: Path, names: set[str], rerun: str = "") -> tuple[dict, dict, dict, dict]:
    """The details, translation results and evolution results of the tasks an earlier call finished, and what
    that call ran on (its own tasks' timings are ratios measured there). Tasks whose name matches ``rerun`` (a
    regex) are not carried: they run again (a verdict the code has since been changed for, say)."""
    earlier = json.loads(path.read_text())
    tasks = earlier["tasks"]
    done = {n: d for n, d in tasks.items() if n in names and ("verdict" in d or "declined" in d)
            and not (rerun and re.search(rerun, n, re.IGNORECASE))}
    translated = {n: StoredResult(Verdict(d["verdict"]), d["speedup"], d["speedup_compiled"])
                  for n, d in done.items() if "verdict" in d}
    evolved = {n: StoredResult(r.verdict, done[n].get("evolved_speedup") or r.speedup_eager,
                               done[n].get("evolved_speedup_compiled") or r.speedup_compiled)
               for n, r in translated.items()}
    device = earlier.get("meta", {}).get("device", "not recorded in the earlier call's file")
    return done, translated, evolved, {"tasks": len(done), "device": device}


def result_row(stage: str, table: dict, by_name: dict, level: int) -> dict:
    """One level of one stage in the committed summary's shape: rates over all of the level's tasks (declined
    and failed ones count as not correct), geomeans over the correct ones (None where nothing was timed)."""
    names = [n for n in by_name if by_name[n].level == level]
    eager = summary([score(n, table.get(n)) for n in names])
    compiled = summary([score(n, table.get(n), "compiled") for n in names])
    timed_compiled = any(table.get(n) is not None and table[n].speedup_compiled for n in names)
    return {"level": level, "stage": stage, "n": len(names), "correct": eager["correct"], "fast_1": eager["fast_1"],
            "geomean_eager": eager["geomean"], "geomean_compiled": compiled["geomean"] if timed_compiled else None,
            "faster_than_compiled": compiled["fast_1"] if timed_compiled else None}


def write_results(path: Path, meta: dict, rows: list[dict], levels: list[int]) -> None:
    """The summary rows of this run's levels, beside the rows of other levels the file already holds (each
    level's meta kept with it: one run per level, on the same device, makes the file)."""
    kept: dict = json.loads(path.read_text()) if path.exists() else {"meta": {}, "rows": []}
    kept["rows"] = [r for r in kept["rows"] if r["level"] not in levels] + rows
    kept["rows"].sort(key=lambda r: (r["level"], r["stage"] != "translated"))
    kept["meta"] = {**kept["meta"], **{f"L{level}": meta for level in levels}}
    path.write_text(json.dumps(kept, indent=1))
