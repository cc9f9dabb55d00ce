"""Corpus splits: whole operator combinations held out, disjoint and stable splits, KernelBench kept out of
training (exact copies and near-duplicates, by the similarity fingerprint)."""

from __future__ import annotations

import re

import pytest

from hipforge.bench.kernelbench import load_kernelbench
from hipforge.tasks.library import load_library
from hipforge.tasks.synth import SeedTask, draft, fingerprint
from hipforge.tasks.synth.candidate import Synthetic, stored_id
from hipforge.tasks.synth.similarity import FingerprintIndex, nearest
from hipforge.train.splits import SPLITS, KernelBenchGuard, Split, SplitPolicy, check_splits, holdout_key, split_tasks
from tests.conftest import kernelbench_jsonl

SEEDS = [SeedTask(t.name, t.source) for t in load_library()]


def _drafts(per_mode: int) -> list[Synthetic]:
    return [draft(mode, 0, i, SEEDS) for mode in ("composition", "mutation", "constraint") for i in range(per_mode)]


def _library_guard() -> KernelBenchGuard:
    """Stands in for KernelBench where the shared copy is not needed: three library tasks."""
    return KernelBenchGuard([(t.name, t.source) for t in load_library()[:3]])


def test_holdout_keys_name_the_combination_not_the_task() -> None:
    tasks = _drafts(30)
    for task in tasks:
        key = holdout_key(task)
        assert key.startswith(task.mode + "/")
        if task.mode == "composition":
            assert key.split("/", 1)[1].split("+") == sorted(set(task.operators))
        if task.mode == "mutation":
            assert task.parents[0] in key
    comps = [t for t in tasks if t.mode == "composition"]
    same = [(a, b) for a in comps for b in comps if a is not b and set(a.operators) == set(b.operators)]
    assert all(holdout_key(a) == holdout_key(b) for a, b in same)
    with pytest.raises(ValueError, match="names no seed"):
        holdout_key(Synthetic("m", "mutation", "x = 1\n", ""))


def test_every_task_sharing_a_held_out_combination_is_held_out() -> None:
    tasks = _drafts(40)
    split = split_tasks(tasks, _library_guard(), SplitPolicy(heldout_share=0.3, validation_share=0.2))
    sizes = split.sizes()
    assert all(sizes[s] > 0 for s in SPLITS) and sum(sizes.values()) == len(split.assigned)
    by_key: dict[str, set[str]] = {}
    for tid, key in split.keys.items():
        by_key.setdefault(key, set()).add(split.assigned[tid])
    held = {k for k, splits in by_key.items() if "heldout" in splits}
    assert held and all(by_key[k] == {"heldout"} for k in held)
    assert {"composition", "mutation", "constraint"} == {k.split("/")[0] for k in split.keys.values()}
    again = split_tasks(list(reversed(tasks)), _library_guard(), SplitPolicy(heldout_share=0.3, validation_share=0.2))
    assert again.assigned == split.assigned  # by content, not by order


def test_a_leaked_combination_or_a_kernelbench_task_in_training_is_refused() -> None:
    guard = _library_guard()
    tasks = _drafts(10)
    split = split_tasks(tasks, guard, SplitPolicy(heldout_share=0.5))
    sources = {stored_id(t.source): t.source for t in tasks}
    held = split.tasks("heldout")[0]
    twin = next(t for t in split.tasks("train") if split.keys[t] != split.keys[held])
    leaked = Split(dict(split.assigned), {**split.keys, twin: split.keys[held]}, {})
    with pytest.raises(ValueError, match="held-out combinations in training"):
        check_splits(leaked, sources, guard)
    problem = load_library()[0]
    tid = stored_id(problem.source)
    sneaked = Split({**split.assigned, tid: "train"}, {**split.keys, tid: "mutation/x"}, {})
    with pytest.raises(ValueError, match="similar to KernelBench problem"):
        check_splits(sneaked, {**sources, tid: problem.source}, guard)
    with pytest.raises(ValueError, match="no KernelBench problems"):
        KernelBenchGuard([])


def _renamed_and_resized(source: str) -> str:
    """What a careless generator might emit from a KernelBench file: other names, other sizes."""
    out = re.sub(r"\bbatch_size\b", "n_batch", source)
    return re.sub(r"= (\d+)\n", lambda m: f"= {int(m.group(1)) * 2}\n", out)


def test_kernelbench_problems_and_their_near_duplicates_never_reach_training() -> None:
    path = kernelbench_jsonl()
    if not path.exists():
        pytest.skip(f"KernelBench problems not found at {path} (set HIPFORGE_KERNELBENCH_PATH)")
    problems = load_kernelbench(str(path))
    guard = KernelBenchGuard((p.task_name, p.source) for p in problems)
    planted = [Synthetic(f"planted/{p.problem_id}", "mutation", src, "", parents=("kb",))
               for p in problems[::40] for src in (p.source, _renamed_and_resized(p.source))]
    tasks = _drafts(25) + planted
    split = split_tasks(tasks, guard)
    planted_ids = {stored_id(t.source) for t in planted}
    assert planted_ids <= set(split.excluded) and not planted_ids & set(split.assigned)
    kb_prints = [(p.task_name, stored_id(p.source), fingerprint(p.source)) for p in problems]
    by_id = {stored_id(t.source): t.source for t in tasks}
    for tid in split.tasks("train") + split.tasks("validation"):
        match = nearest(fingerprint(by_id[tid]), kb_prints)
        assert match is None or match.score < guard.threshold, (tid, match)


def test_the_index_finds_what_the_pairwise_scan_finds() -> None:
    prints = [(t.name, stored_id(t.source), fingerprint(t.source)) for t in _drafts(40)]
    index = FingerprintIndex()
    for i, (name, tid, fp) in enumerate(prints):
        for threshold in (0.3, 0.9):
            slow = nearest(fp, prints[:i])
            fast = index.best_above(fp, threshold)
            expected = slow if slow is not None and slow.score >= threshold else None
            assert (fast and fast.score) == (expected and expected.score)
        index.add(name, tid, fp)
    assert len(index) == len(prints)
