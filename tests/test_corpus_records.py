"""Corpus records: the multi-turn fix format (feedback worded as RL rollouts feed it back, only the fix trained),
deduplication by prompt and completion, snapshot ids on checkpoints, corruptions kept only with the verdict they
claim, and the builder's output directory."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from hipforge.agents.prompts import feedback_from, feedback_prompt
from hipforge.execution.verdict import EvalResult, Timing, Verdict
from hipforge.tasks.library import library_task, load_library
from hipforge.train.checkpoints import with_snapshot, write_metadata
from hipforge.train.corpus import attempted_in, build_corpus
from hipforge.train.corpus_kernels import (
    Attempt,
    CorpusTask,
    TaskKernels,
    corrupted_fixes,
    real_fixes,
    translate_and_verify,
)
from hipforge.train.corpus_tasks import CorpusConfig, load_tasks, save_tasks, synthesize_tasks
from hipforge.train.corrupt import corruptions
from hipforge.train.records import dedupe, fix_record, load_jsonl, sft_record, snapshot_id, snapshot_of_ids
from hipforge.train.splits import KernelBenchGuard, SplitPolicy
from hipforge.translate import generate

TASK = library_task("elementwise/gelu_tanh").source
KERNEL = generate(TASK).source


def _result(verdict: Verdict, log: str = "") -> EvalResult:
    timing = Timing(1.0, 1.0, 1.0, 0.0, 1) if verdict == Verdict.CORRECT else None
    return EvalResult(verdict, f"{verdict.value} on seed 0", compile_log=log, runtime=timing, ref_eager=timing,
                      speedup_eager=1.0 if timing else None)


class FakePool:
    """The pool's interface with verdicts from a rule: what the builder does with verdicts, not the executor."""

    name = "fake"

    def __init__(self, rule: Callable[[str], EvalResult]) -> None:
        self.rule, self.seen = rule, 0
        self.batches: list[list[str]] = []

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        self.batches.append([candidate for candidate, _ in items])
        for i, candidate in enumerate(self.batches[-1]):
            self.seen += 1
            yield i, self.rule(candidate)

    def close(self) -> None:
        pass


def test_a_fix_record_shows_the_attempt_and_feedback_and_trains_only_the_fix() -> None:
    bad = corruptions(KERNEL)[0]
    feedback = feedback_from(bad.source, _result(Verdict.COMPILE_ERROR, "module.cpp:12: error: expected ';'"), 1500)
    record = fix_record("t1", "gelu", TASK, feedback, "k1", KERNEL, 1.2, group="mutation/x")
    assert [m["role"] for m in record.prompt] == ["system", "user", "assistant", "user"]
    assert record.prompt[2]["content"] == bad.source
    assert record.prompt[3]["content"] == feedback_prompt(feedback)  # what the rollout sends back
    assert "expected ';'" in record.prompt[3]["content"] and "verdict: compile_error" in record.prompt[3]["content"]
    assert record.completion == [{"role": "assistant", "content": KERNEL}]  # the loss covers this turn only
    assert record.kind == "sft" and record.feedback_turns == 1 and record.group == "mutation/x"
    single = sft_record("t1", "gelu", TASK, "k1", KERNEL, 1.2)
    assert record.prompt[:2] == single.prompt and record.record_id != single.record_id
    with pytest.raises(ValueError, match="needs a failed attempt"):
        fix_record("t1", "gelu", TASK, feedback_from(KERNEL, _result(Verdict.CORRECT)), "k1", KERNEL, 1.0)


def test_dedupe_drops_repeated_prompts_and_completions_but_keeps_distinct_fixes() -> None:
    a = sft_record("t1", "a", TASK, "k1", KERNEL, 1.0)
    same_prompt = sft_record("t1", "a", TASK, "k2", KERNEL + "# other\n", 1.0)
    same_kernel = sft_record("t2", "b", TASK + "# another task\n", "k1", KERNEL, 1.0)
    other = sft_record("t3", "c", TASK + "# third\n", "k3", KERNEL + "# third\n", 1.0)
    fixes = [fix_record("t1", "a", TASK, feedback_from(c.source, _result(Verdict(c.expected))), "k1", KERNEL, 1.0)
             for c in corruptions(KERNEL)]
    kept, dropped = dedupe([a, same_prompt, same_kernel, other, *fixes, fixes[0]])
    assert kept == [a, other, *fixes] and dropped == 3  # a fix shares its completion with `a`, not its attempt


def test_snapshot_ids_are_stable_and_checkpoints_carry_them(tmp_path: Path) -> None:
    records = [sft_record(f"t{i}", "a", TASK, f"k{i}", KERNEL, 1.0) for i in range(3)]
    snap = snapshot_id(records)
    assert snap == snapshot_id(records[::-1]) == snapshot_of_ids([r.record_id for r in records])
    assert snap != snapshot_id(records[:2])
    path = write_metadata(tmp_path, {"checkpoint_id": "sft-1", "stage": "sft"}, records)
    meta = json.loads(path.read_text())
    assert meta["data_snapshot"] == snap and meta["records"] == 3
    assert json.loads(write_metadata(tmp_path, {"stage": "sft"}).read_text()) == {"stage": "sft"}  # old callers
    with pytest.raises(ValueError, match="names data snapshot"):
        with_snapshot({"data_snapshot": "something-else"}, records)


def test_corruptions_change_the_kernel_and_only_the_claimed_verdicts_are_kept() -> None:
    made = corruptions(KERNEL)
    assert {c.expected for c in made} == {"compile_error", "incorrect"}
    assert all(c.source != KERNEL and c.source.count("__global__") == KERNEL.count("__global__") for c in made)
    task = CorpusTask("t1", "gelu", "mutation", TASK, TASK, "mutation/x", "train")
    kernels = [TaskKernels(task, [Attempt(KERNEL, _result(Verdict.CORRECT), "translated")])]
    claimed = {c.source: c for c in made}
    # the executor agrees about the compile error and disagrees about the incorrect one
    pool = FakePool(lambda src: _result(Verdict.COMPILE_ERROR if claimed[src].expected == "compile_error"
                                        else Verdict.CORRECT))
    fixes, counts = corrupted_fixes(kernels, pool, 2, 1500, lambda _: None)
    assert pool.seen == 2 and [f.attempt.verdict for f in fixes] == ["compile_error"]
    assert sorted(counts.values()) == [1, 1] and any(k.endswith("/got correct") for k in counts)


def test_the_builder_writes_verified_records_per_split_and_a_manifest(tmp_path: Path) -> None:
    def rule(src: str) -> EvalResult:
        """Translations pass; of the corruptions, the compile errors are confirmed and the wrong results are not."""
        claims = {c.source: c.expected for k in pool.batches[0] for c in corruptions(k)}
        return _result(Verdict.COMPILE_ERROR if claims.get(src) == "compile_error" else Verdict.CORRECT)

    pool = FakePool(rule)
    guard = KernelBenchGuard([(t.name, t.source) for t in load_library()[:3]])
    config = CorpusConfig(limit=6, workers=2, children=1, policy=SplitPolicy(heldout_share=0.3))
    manifest = build_corpus(config, guard, pool, tmp_path)
    files = {split: load_jsonl(tmp_path / f"{split}.jsonl") for split, info in manifest["splits"].items()
             if info["records"]}
    assert (tmp_path / "manifest.json").exists() and "train" in files
    assert json.loads((tmp_path / "manifest.json").read_text())["splits"] == manifest["splits"]
    for split, rows in files.items():
        assert manifest["splits"][split]["snapshot"] == snapshot_id(rows)
        assert (tmp_path / f"{split}.parquet").exists()
    tasks = {split: {r.task_id for r in rows} for split, rows in files.items()}
    groups = {split: {r.group for r in rows} for split, rows in files.items()}
    assert not tasks["train"] & tasks.get("heldout", set()) and not groups["train"] & groups.get("heldout", set())
    every = [r for rows in files.values() for r in rows]
    multi = [r for r in every if r.feedback_turns]
    assert multi and all("verdict: compile_error" in r.prompt[-1]["content"] for r in multi)
    assert all(r.prompt[-2]["content"] != r.completion[0]["content"] for r in multi)
    counts = manifest["counts"]
    assert counts["records"]["single_turn"] + counts["records"]["multi_turn"] == len(every)
    kept = sum(n for k, n in counts["corruptions"].items() if k.endswith("/kept"))
    assert counts["records"]["multi_turn"] == len(multi) == kept
    assert any(k.endswith("/got correct") for k in counts["corruptions"])  # claimed incorrect, dropped
    assert set(manifest["seconds"]) >= {"synthesize", "split", "translate_evolve_verify", "corrupt_verify"}


def test_tasks_synthesized_once_are_verified_from_their_file_and_bad_files_are_named(tmp_path: Path) -> None:
    guard = KernelBenchGuard([(t.name, t.source) for t in load_library()[:3]])
    config = CorpusConfig(limit=6, workers=2, children=0, corruptions=0, policy=SplitPolicy(heldout_share=0.3))
    tasks, stages = synthesize_tasks(config, guard)
    save_tasks(tmp_path / "tasks.json", tasks, stages)
    loaded, loaded_stages = load_tasks(tmp_path / "tasks.json")
    assert loaded == tasks and loaded_stages.counts["split_tasks"] == stages.counts["split_tasks"]
    save_tasks(tmp_path / "tasks.json.gz", tasks, stages)  # gzipped, as a committed tasks file is kept
    assert load_tasks(tmp_path / "tasks.json.gz")[0] == tasks
    pool = FakePool(lambda src: _result(Verdict.RUNTIME_ERROR if pool.seen == 1 else Verdict.CORRECT))
    manifest = build_corpus(config, guard, pool, tmp_path / "out", synthesized=(loaded[1:], loaded_stages))
    failed = manifest["counts"]["failure_examples"]  # what a far-away box failed on, readable in its manifest
    assert list(failed) == ["runtime_error"] and len(failed["runtime_error"]) == 1
    assert failed["runtime_error"][0].endswith(" (translated): runtime_error on seed 0")
    assert manifest["seconds"]["synthesize"] == stages.seconds["synthesize"]  # carried, not run again
    assert manifest["seconds"]["total"] >= stages.seconds["synthesize"]
    ids = {r.task_id for split, info in manifest["splits"].items() if info["records"]
           for r in load_jsonl(tmp_path / "out" / f"{split}.jsonl")}
    assert ids and ids <= {t.task_id for t in loaded[1:]}  # the task left out of the file's list made nothing
    judged = attempted_in(tmp_path / "out")  # what a later build of the same tasks file leaves out
    assert judged == {t.task_id for t in loaded[1:] if t.task_id} and tasks[0].task_id not in judged
    with pytest.raises(ValueError, match="is not a corpus built with a list of the tasks it judged"):
        attempted_in(tmp_path)
    (tmp_path / "bad.json").write_text('{"tasks": [{"task_id": 1}]}')
    with pytest.raises(ValueError, match="bad.json is not a tasks file"):
        load_tasks(tmp_path / "bad.json")


def test_a_limit_scales_the_corpus_preset_in_its_shares() -> None:
    full = CorpusConfig().counts()
    assert sum(full.values()) > 5000 and full["composition"] > full["constraint"] > full["mutation"]
    small = CorpusConfig(limit=60).counts()
    assert abs(sum(small.values()) - 60) <= 2 and small["composition"] > small["mutation"]
    with pytest.raises(ValueError, match="unknown preset"):
        CorpusConfig(preset="huge").counts()


def test_real_failures_become_fixes_but_lost_evaluations_do_not() -> None:
    task = CorpusTask("t1", "gelu", "mutation", TASK, TASK, "mutation/x", "train")
    lost = EvalResult(Verdict.RUNTIME_ERROR, "evaluation lost", phase="pool")
    attempts = [Attempt(KERNEL, _result(Verdict.CORRECT), "translated"),
                Attempt(KERNEL + "# a\n", _result(Verdict.INCORRECT), "evolved"),
                Attempt(KERNEL + "# b\n", lost, "evolved"),
                Attempt(KERNEL + "# c\n", _result(Verdict.TIMEOUT), "evolved")]
    fixes = real_fixes([TaskKernels(task, attempts)], 1500)
    assert [(f.attempt.source, f.attempt.verdict) for f in fixes] == [(KERNEL + "# a\n", "incorrect")]
    assert real_fixes([TaskKernels(task, attempts[1:])], 1500) == []  # no verified kernel, nothing to fix towards



def test_a_verification_box_keeps_what_finished_in_time_and_translations_go_first() -> None:
    tasks = [CorpusTask(f"t{i}", t.name, "mutation", t.source, t.source, f"g{i}", "train")
             for i, t in enumerate(load_library()[:4])]
    pool = FakePool(lambda src: _result(Verdict.CORRECT))
    kernels = translate_and_verify(tasks, pool, 1, 0, lambda _: None, deadline=time.monotonic() - 1)
    assert pool.seen == 1 and sum(len(tk.attempts) for tk in kernels) == 1  # past the box: the first result only
    assert [a.how for tk in kernels for a in tk.attempts] == ["translated"]
    everything = translate_and_verify(tasks, FakePool(lambda src: _result(Verdict.CORRECT)), 1, 0, lambda _: None)
    made = [a.how for tk in everything for a in tk.attempts]
    assert made.count("translated") == len(tasks) and "evolved" in made
    assert pool.batches[0][:len(tasks)] == [tk.attempts[0].source for tk in everything]  # translations first
