"""The training flow's parts (scripts/train_flow_gpu.py): what it reads, how it scores a checkpoint, its clock,
and that it imports nothing the GPU machine lacks (Dagster, DuckDB, pydantic)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.paths import REPO_ROOT
from hipforge.tasks.library import load_library
from hipforge.train import flow_data, flow_eval, hf
from hipforge.train.records import rl_record, sft_record

KERNEL = "import os\nclass ModelNew:\n    pass\n"


def _records(n: int) -> list:
    return [sft_record(f"t{i}", t.name, t.source, f"k{i}", KERNEL + "#" * i, 1.0, "brief")
            for i, t in enumerate(load_library()[:n])]


def _write(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**r.row(), "a_field_from_a_newer_builder": 1}) + "\n" for r in rows))


def test_a_corpus_directory_and_an_exports_folder(tmp_path: Path) -> None:
    rows = _records(6)
    for split, part in zip(flow_data.SPLITS, (rows[:4], rows[4:5], rows[5:]), strict=True):
        _write(tmp_path / "corpus" / f"{split}.jsonl", part)
    (tmp_path / "corpus" / "manifest.json").write_text("{}")
    train = tmp_path / "corpus" / "train.jsonl"  # gzipped, as a corpus travels
    (tmp_path / "corpus" / "train.jsonl.gz").write_bytes(gzip.compress(train.read_bytes()))
    train.unlink()
    corpus = flow_data.load_corpus(tmp_path / "corpus")
    assert corpus.origin == "corpus" and [len(corpus.splits[s]) for s in flow_data.SPLITS] == [4, 1, 1]
    (tmp_path / "corpus" / "heldout.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="heldout"):
        flow_data.load_corpus(tmp_path / "corpus")

    _write(tmp_path / "exports" / "sft" / "snap" / "sft.jsonl", rows)
    rl = [rl_record(r.task_id, r.task_name, load_library()[i].source, "", "") for i, r in enumerate(rows)]
    _write(tmp_path / "exports" / "rl" / "snap" / "rl.jsonl", rl)
    exports = flow_data.load_corpus(tmp_path / "exports")
    assert exports.origin == "exports" and sum(len(v) for v in exports.splits.values()) == 6
    for split, records in exports.splits.items():
        assert all(flow_data.hash_split(r.task_id) == split and r.task_source for r in records)
    with pytest.raises(FileNotFoundError, match="neither a corpus"):
        flow_data.load_corpus(tmp_path)


def test_shards_of_one_build_are_read_as_one_corpus(tmp_path: Path) -> None:
    rows = _records(6)
    for shard, part in (("a", rows[:4]), ("b", rows[3:])):  # row 3 in both: verified twice, kept once
        for split in flow_data.SPLITS:
            _write(tmp_path / shard / f"{split}.jsonl", part if split == "train" else part[:1])
        (tmp_path / shard / "manifest.json").write_text(json.dumps({"shard": shard}))
    corpus = flow_data.load_corpora([tmp_path / "a", tmp_path / "b"])
    assert [r.task_id for r in corpus.splits["train"]] == [r.task_id for r in rows]
    assert [r.task_id for r in corpus.splits["heldout"]] == [rows[0].task_id, rows[3].task_id]
    assert corpus.manifest == {"parts": [{"shard": "a"}, {"shard": "b"}]}


def test_prompts_tasks_and_what_fits() -> None:
    from hipforge.train.tokenizer import train_tokenizer

    record = _records(1)[0]
    source = load_library()[0].source
    assert flow_data.task_source(record) == source.rstrip()  # read back out of the prompt
    fix = flow_data.record_from({**record.row(), "prompt": record.prompt + [
        {"role": "assistant", "content": "broken"}, {"role": "user", "content": "verdict: compile_error"}]})
    assert flow_data.first_turn(fix) == record.prompt
    (rl,) = flow_data.rl_prompts([fix, record], {"t0": "SMOKE"})  # one per task
    assert rl.kind == "rl" and rl.prompt == record.prompt and rl.eval_source == "SMOKE"
    tokenizer = train_tokenizer([source, KERNEL], 300, "lines")
    lengths = [len(flow_data.chat_tokens(tokenizer, r.prompt + r.completion, False)) for r in _records(3)]
    kept = flow_data.fitting(_records(3), tokenizer, sorted(lengths)[1])
    assert len(kept) == 2 and max(lengths) not in [len(flow_data.chat_tokens(tokenizer, r.prompt + r.completion,
                                                                             False)) for r in kept]
    assert flow_data.spread(list(range(10)), 3) == [0, 3, 6] and flow_data.spread([1, 2], 5) == [1, 2]


def _task(name: str, split: str) -> flow_data.EvalTask:
    return flow_data.EvalTask(name, split, [], "SRC", "SRC")


def test_rows_score_greedy_answers_and_pass_at_k() -> None:
    correct = EvalResult(Verdict.CORRECT, speedup_eager=2.0, phase="done")
    wrong = EvalResult(Verdict.INCORRECT, phase="check")
    syntax = EvalResult(Verdict.COMPILE_ERROR, "not a Python file", phase="static")
    answers = [flow_eval.Answers(_task("a", "s"), "A", ["A", "a1"]),  # greedy correct
               flow_eval.Answers(_task("b", "s"), "B", ["b1", "b2"]),  # greedy wrong, a sample correct
               flow_eval.Answers(_task("c", "s"), None),  # prompt too long: a failed task
               flow_eval.Answers(_task("d", "s"), "D", ["d1", "d2"])]  # not judged in time: left out
    verdicts = {("a", "A"): correct, ("a", "a1"): syntax, ("b", "B"): wrong, ("b", "b1"): syntax,
                ("b", "b2"): correct}
    (row,) = flow_eval.rows("sft", answers, verdicts, samples=2)
    assert (row["n"], row["n_planned"]) == (3, 4)
    assert row["correct"] == pytest.approx(1 / 3) and row["compiled"] == pytest.approx(2 / 3)
    assert row["fast_1"] == pytest.approx(1 / 3) and row["geomean"] == pytest.approx(2.0)
    assert row["parsed"] == pytest.approx(2 / 3) and row["pass@2"] == 1.0 and row["n_pass@2"] == 2
    said = {t["task"]: t for t in flow_eval.transcript("sft", answers, verdicts)}
    assert said["b"]["answer"] == "B" and (said["b"]["verdict"], said["b"]["phase"]) == ("incorrect", "check")
    assert said["c"]["message"] == "prompt too long for the context" and said["d"]["verdict"] is None


def test_score_judges_greedy_first_and_stops_at_the_deadline() -> None:
    class Counting:
        def __init__(self) -> None:
            self.batches: list[list[str]] = []

        def __call__(self, jobs, step=0):  # noqa: ANN001, ANN204
            self.batches.append([j.source for j in jobs])
            from hipforge.train.scoring import Scored
            return [Scored(EvalResult(Verdict.INCORRECT), 0.0, "k") for _ in jobs]

    answers = [flow_eval.Answers(_task(n, "s"), n.upper(), [n.upper(), n + "1"]) for n in "abc"]
    scorer = Counting()
    verdicts = flow_eval.score([answers], scorer, time.monotonic() + 60, chunk=2)  # type: ignore[arg-type]
    order = [c for batch in scorer.batches for c in batch]
    assert order[:3] == ["A", "B", "C"] and len(order) == 6 and len(verdicts) == 6  # duplicates judged once
    mixed = [flow_eval.Answers(_task(n, split), n.upper(), []) for n, split in
             (("a", "s"), ("b", "s"), ("c", "s"), ("d", "l1"), ("e", "l2"))]
    first = Counting()
    flow_eval.score([mixed], first, time.monotonic() + 60, chunk=3)  # type: ignore[arg-type]
    assert first.batches[0] == ["A", "D", "E"]  # every split in the first chunk a short box judges
    late = Counting()
    assert flow_eval.score([answers], late, time.monotonic() - 1) == {} and not late.batches  # type: ignore[arg-type]
    # two checkpoints: taken in turn, and an answer both gave is judged once
    rl = [flow_eval.Answers(_task(n, "s"), n.upper() if n == "a" else n + "!", []) for n in "abc"]
    both = Counting()
    judged = flow_eval.score([[flow_eval.Answers(a.task, a.greedy, []) for a in answers], rl], both,
                             time.monotonic() + 60, chunk=2)  # type: ignore[arg-type]
    assert [c for batch in both.batches for c in batch] == ["A", "B", "b!", "C", "c!"] and len(judged) == 5


def test_wall_clock_sets_the_rate_by_time_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    marks: list[tuple[int, float]] = []
    clock = hf.wall_clock(10.0, peak_lr=1.0, warmup_s=2.0, floor=0.1, on_mark=lambda s, t: marks.append((s, t)),
                          marks=2)

    class State:
        global_step = 3

    class Control:
        should_training_stop = False

    optimizer = type("Opt", (), {"param_groups": [{"lr": 0.0}]})()
    clock.on_train_begin(None, State, Control)
    now[0] = 101.0
    clock.on_step_begin(None, State, Control, optimizer=optimizer)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.5)  # half way through the warm-up
    now[0] = 106.0
    clock.on_step_begin(None, State, Control, optimizer=optimizer)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.1 + 0.9 * 0.5)  # the cosine's middle
    clock.on_step_end(None, State, Control)
    assert marks == [(3, 6.0)] and not Control.should_training_stop
    now[0] = 110.5
    clock.on_step_end(None, State, Control)
    assert marks[-1] == (3, 10.5) and Control.should_training_stop
    whole = hf.wall_clock(10.0, whole_steps=True)  # GRPO's box: no step that would end past it begins
    Control.should_training_stop, now[0] = False, 100.0
    whole.on_train_begin(None, State, Control)
    for at, stops in ((104.5, False), (107.0, False), (108.5, True)):  # steps of 4.5, 2.5 and 1.5 s
        now[0] = at
        whole.on_step_end(None, State, Control)
        assert Control.should_training_stop is stops, at  # the last: one more would end at 10 s
    Control.should_training_stop, now[0] = False, 100.0
    whole.on_train_begin(None, State, Control)
    now[0] = 106.0
    whole.on_step_end(None, State, Control)  # a first step of 6 s: another one would end at 12 s
    assert Control.should_training_stop


def test_the_gpu_scripts_import_nothing_the_gpu_machine_lacks() -> None:
    code = ("import sys, importlib.util\n"
            "for name in ('dagster', 'duckdb', 'pydantic'):\n    sys.modules[name] = None\n"
            "for module in ('hipforge.train.flow_eval', 'hipforge.train.sweep', 'hipforge.train.flow_plots', "
            "'hipforge.train.grpo', 'hipforge.train.sft', 'hipforge.bench.kernelbench', 'hipforge.tasks', "
            "'hipforge.execution.pool.local', 'hipforge.agents.translator.offline', 'trl', 'datasets'):\n"
            "    __import__(module)\n"
            f"for script in ('train_flow_gpu', 'preset_14b_gpu'):\n    folder = {str(REPO_ROOT / 'scripts')!r}\n"
            "    spec = importlib.util.spec_from_file_location(script, f'{folder}/{script}.py')\n"
            "    module = sys.modules[script] = importlib.util.module_from_spec(spec)\n"
            "    spec.loader.exec_module(module)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_grpo_prompts_come_from_tasks_sft_never_saw() -> None:
    records = _records(40)
    records += [r for r in records[:10]]  # a task's second record (a multi-turn fix) goes where its first does
    sft, rl = flow_data.hold_for_rl(records, 0.25)
    assert sft and rl and len(sft) + len(rl) == len(records)
    assert not {r.task_id for r in sft} & {r.task_id for r in rl}  # whole tasks, never split between them
    assert flow_data.hold_for_rl(records, 0.25) == (sft, rl)  # by task id: the same split every run
    assert flow_data.hold_for_rl(records, 0.0) == (list(records), [])
    mixed = flow_data.grpo_mix(rl, sft, 0.5)
    held = {r.task_id for r in rl}
    assert {r.task_id for r in mixed} >= held and len(mixed) == 2 * len(held)  # one seen task per held-back one
    assert all(a.task_id in held or b.task_id in held for a, b in zip(mixed, mixed[1:], strict=False))  # spread
    assert len({r.task_id for r in mixed}) == len(mixed)  # one prompt per task
    assert flow_data.grpo_mix(rl, sft, 0.0) == flow_data.per_task(rl)
    assert flow_data.grpo_mix([], sft, 0.5) == flow_data.per_task(sft)


def test_boxed_sft_keeps_the_model_where_its_held_out_loss_was_lowest(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    import torch

    from hipforge.train import sweep
    from hipforge.train.base_model import TinyQwen2, build_model
    from hipforge.train.config import SFTHyper
    from hipforge.train.tokenizer import train_tokenizer

    records = _records(4)
    tokenizer = train_tokenizer([m["content"] for r in records for m in r.prompt + r.completion], 300)
    model = build_model(TinyQwen2(32, 1, 2, 1, 64, max_position_embeddings=1024), tokenizer, "cpu")
    losses, seen = iter([3.0, 1.0, 2.0, 2.5, 2.6, 2.7, 2.8]), []

    def loss(m: torch.nn.Module, *_: object) -> float:  # the second probe is the best
        seen.append({k: v.clone() for k, v in m.state_dict().items()})
        return next(losses)

    monkeypatch.setattr(sweep, "validation_loss", loss)
    run = sweep.train_boxed(model, tokenizer, records, records, tmp_path, SFTHyper(batch_size=2, max_length=8192),
                            seconds=3, probes=3)
    assert [p[2] for p in run["curve"]][:2] == [3.0, 1.0] and run["validation_loss"] == 1.0
    assert run["kept_step"] == run["curve"][1][0] < run["steps"]
    kept = model.state_dict()
    assert all(torch.equal(kept[k], v) for k, v in seen[1].items())
    assert not all(torch.equal(kept[k], v) for k, v in seen[-1].items())


def test_the_stats_record_no_machine_directories(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from scripts.train_flow_gpu import portable

    monkeypatch.chdir(tmp_path)
    assert portable(tmp_path / "corpus" / "c0") == "corpus/c0"
    assert portable(Path("/elsewhere/out/training_h200.json")) == ".../training_h200.json"
    assert portable([Path(".carry/c0"), tmp_path / "c1"]) == "['.carry/c0', 'c1']"
    assert portable(0.5) == "0.5"
