"""What a trial's outputs say, in the parent: per forward of the trial, the committed metadata and keyed
checksums against the reference's, and the whole outputs (or a huge one's fine sums) where they were
shipped. The verdicts this module reaches on its own are a precision downgrade; everything else it returns
as the reason a trial failed, for the judge to weigh."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hipforge.execution import checksum, tensorfile
from hipforge.execution.config import EvalConfig
from hipforge.execution.job_common import rep_seeds
from hipforge.execution.numerics import compare_outputs
from hipforge.execution.trials import Trial, TrialLog
from hipforge.execution.verdict import Verdict, conclude


class OutputCheck:
    def __init__(self, cfg: EvalConfig, meta: list[list[dict[str, Any]] | None], log: TrialLog) -> None:
        self.cfg, self.meta, self.log = cfg, meta, log

    def trial(self, trial: Trial, committed: dict[str, Any], files: Any, ref: dict[str, Any]) -> str | None:
        """None if every forward of the trial agrees with the reference's, else why the first one does not:
        a stale or cached output in any of them fails the trial."""
        metas, sums = committed.get("meta"), committed.get("sums")
        parts = [metas, sums, *([files] if trial.full else [])]
        if not all(isinstance(x, list) and len(x) == trial.reps for x in parts):
            return f"trial {trial.id}: what it committed does not cover its {trial.reps} forward(s)"
        for rep, seed in enumerate(rep_seeds(trial.seed, trial.reps)):
            meta = self.meta[trial.size] or []
            if metas[rep] != meta:
                self.downgrade(metas[rep], meta)
                return self.describe_meta(metas[rep], meta)
            whole = self.compare_files(trial, seed, files[rep], ref["files"][rep], meta) if trial.full else None
            if (off := checksum.mismatch(sums[rep], ref["sums"][rep], ref["bounds"][rep])) is not None:
                return whole or f"trial {trial.id} (seed {seed}): {off}"
            if whole:
                return whole
        return None

    def compare_files(self, trial: Trial, seed: int, files: Any, ref_files: list[str],
                      meta: list[dict[str, Any]]) -> str | None:
        if not isinstance(files, list) or len(files) != len(meta):
            return f"returns {len(files) if isinstance(files, list) else '?'} outputs, the reference {len(meta)}"
        refs = iter(ref_files)
        got, want = [], []
        for path, m in zip(files, meta, strict=True):
            shape = m["shape"]
            if not checksum.whole(tensorfile.numel(shape), self.cfg.whole_output_limit):  # fine sums and bounds
                blocks = -(-tensorfile.numel(shape) // checksum.FINE_BLOCK)
                try:
                    mine = tensorfile.read(Path(path), {"dtype": "float64", "shape": [blocks, 2]})
                except (OSError, ValueError) as e:
                    return f"its shipped sums are unreadable: {e}"
                theirs, bound = tensorfile.read(Path(next(refs))), tensorfile.read(Path(next(refs)))
                if (off := checksum.fine_mismatch(mine, theirs, bound)) is not None:
                    return f"seed {seed}: {off}"
                continue
            try:
                got.append(tensorfile.read(Path(path), m))
            except (OSError, ValueError) as e:
                return f"its shipped output is unreadable: {e}"
            want.append(tensorfile.read(Path(next(refs))))
        report = compare_outputs(got, want, self.cfg) if got else {"ok": True, "message": ""}
        report["digest"] = _digest(got)
        if report["ok"]:
            self.log.right.add(report["digest"])
        if trial.purpose == "seed" and not trial.ordered:
            report["seed"] = seed
            self.log.reports.append(report)
        return None if report["ok"] else f"seed {seed}: {report['message']}"

    @staticmethod
    def downgrade(got: Any, want: list[dict[str, Any]]) -> None:
        """A floating output of fewer bits than the reference's is a precision downgrade, not a mistake."""
        import torch

        for g, w in zip(got if isinstance(got, list) else [], want, strict=False):
            mine, theirs = getattr(torch, str(g.get("dtype")), None), getattr(torch, w["dtype"])
            if isinstance(mine, torch.dtype) and mine.is_floating_point and theirs.is_floating_point and \
                    torch.finfo(mine).bits < torch.finfo(theirs).bits:
                raise conclude(Verdict.HACKED, f"returns {mine} where the reference returns {theirs}",
                               hack_check="precision_downgrade", phase="check")

    @staticmethod
    def describe_meta(got: Any, want: list[dict[str, Any]]) -> str:
        if not isinstance(got, list) or len(got) != len(want):
            return f"returns {len(got) if isinstance(got, list) else '?'} outputs, the reference {len(want)}"
        for g, w in zip(got, want, strict=True):
            if g != w:
                return f"output {g.get('shape')} {g.get('dtype')}, reference {w['shape']} {w['dtype']}"
        return "output metadata differs"


def shipped(*files: Any) -> list[str]:
    """Every path in the (nested, per forward) file lists of a trial, to remove after it."""
    return [p for item in files for p in (shipped(*item) if isinstance(item, list) else [item])]


def _digest(tensors: list[Any]) -> str:
    """Of the outputs' bytes, read in place (no copy of a large output)."""
    import torch

    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        h.update(t.contiguous().reshape(-1).view(torch.uint8).numpy().data)
    return h.hexdigest()
