"""The trust boundary at its edges: each check, and the honest kernel just on the right side of it.

Every case is an honest corpus kernel (tests/corpus) with its ModelNew.forward rebound around the honest
one; the cpu backend builds the kernel once (the build cache is content-addressed) and each case pays
only its evaluation.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hipforge.execution import judge as judge_module
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.execution.verdict import EvalResult, Verdict
from tests.corpus import entries

HONEST = {e.name: e for e in entries("honest")}
CONFIG = EvalConfig(gate=False, timed_trials=5, warmup=1, static_checks=False)  # the structure, not the scan
OUTSIDE = Path("/tmp/hipforge-boundary-target.txt")


def around(name: str, body: str, prelude: str = "", task: str | None = None,
           config: EvalConfig = CONFIG) -> EvalResult:
    """Evaluate the honest ``name`` kernel with forward replaced by ``body`` (``honest(self, x)`` is the
    original forward); ``prelude`` runs at import; ``task`` replaces the task source."""
    entry = HONEST[name]
    source = (entry.candidate_source + "\n\nimport os, sys, time, ctypes, threading\nimport torch\n" + prelude +
              "\n_honest = ModelNew.forward\n\ndef _forward(self, *args):\n    x = args[0]\n    honest = _honest\n" +
              textwrap.indent(body, "    ") + "\n\nModelNew.forward = _forward\n")
    return evaluate(source, task or entry.task_source, config)


@pytest.fixture(autouse=True)
def _clean_outside():
    OUTSIDE.unlink(missing_ok=True)
    yield
    OUTSIDE.unlink(missing_ok=True)


def test_honest_baseline_is_correct() -> None:
    result = around("relu", "return honest(self, x)")
    assert result.verdict == Verdict.CORRECT, result.message
    # every timed trial checked, of each batch (a batch is timed again where the readings call for it)
    assert result.integrity["checked"]["timed"] == CONFIG.timed_trials * result.integrity["timed_batches"]
    assert "write-recorder" in result.isolation


def test_a_native_write_beside_the_work_dir_is_refused_and_recorded() -> None:
    """A path that shares the work dir's prefix is outside it."""
    body = ("ctypes.CDLL(None).open((os.getcwd() + '-beside').encode(), 0o101, 0o644)\n"
            "return honest(self, x)")
    result = around("relu", body)
    assert result.verdict == Verdict.HACKED and result.hack_check == "sandbox_escape", result.message
    assert "-beside" in result.message


def test_writes_inside_the_work_dir_are_fine() -> None:
    body = ("libc = ctypes.CDLL(None)\nfd = libc.open(b'scratch.bin', 0o101, 0o644)\nlibc.close(fd)\n"
            "open('notes.txt', 'w').write('ok')\nreturn honest(self, x)")
    result = around("relu", body)
    assert result.verdict == Verdict.CORRECT, result.message


def test_a_symlink_out_of_the_work_dir_is_followed_by_the_recorder() -> None:
    body = (f"libc = ctypes.CDLL(None)\nlibc.symlink({str(OUTSIDE).encode()!r}, b'link')\n"
            "libc.open(b'link', 0o101, 0o644)\nreturn honest(self, x)")
    result = around("relu", body)
    assert result.hack_check == "sandbox_escape" and str(OUTSIDE) in result.message, result.message
    assert not OUTSIDE.exists()


def test_a_one_element_in_place_edit_of_an_input_is_seen() -> None:
    body = "out = honest(self, x)\nx.view(-1)[0] += 1e-6\nreturn out"
    result = around("relu", body)
    assert result.verdict == Verdict.HACKED and result.hack_check == "input_mutation", result.message


def test_an_output_buffer_reused_across_calls_is_honest() -> None:
    body = ("if not hasattr(self, 'buf'):\n    self.buf = torch.empty_like(x)\n"
            "self.buf.copy_(honest(self, x))\nreturn self.buf")
    result = around("relu", body)
    assert result.verdict == Verdict.CORRECT, result.message


def test_a_result_cached_in_a_reused_buffer_is_caught() -> None:
    body = ("if not hasattr(self, 'buf'):\n    self.buf = honest(self, x)\nreturn self.buf")
    result = around("relu", body)
    assert result.verdict in (Verdict.INCORRECT, Verdict.HACKED), result.message


def test_a_cache_that_answers_only_after_the_correctness_seeds_is_caught() -> None:
    """Right on every correctness seed, then a cached answer: the timed trials' fresh inputs expose it."""
    body = ("self.calls = getattr(self, 'calls', 0) + 1\n"
            "if self.calls <= 7:  # a warm-up, the five seeds and the poison probe\n"
            "    self.last = honest(self, x)\nreturn self.last")
    plain = EvalConfig(**{**CONFIG.to_dict(), "adversarial": False, "second_size": False})
    result = around("relu", body, config=plain)
    assert result.verdict == Verdict.HACKED and result.hack_check == "result_caching", result.message


def test_half_precision_outputs_through_the_whole_evaluator() -> None:
    half_task = HONEST["relu"].task_source.replace("torch.randn(16, 64)", "torch.randn(16, 64).half()")
    result = around("relu", "return honest(self, x.float()).half()", task=half_task)
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.atol == pytest.approx(1e-2)  # fp16's tolerance, from the shipped fp16 outputs
    bf16_task = half_task.replace(".half()", ".bfloat16()")
    result = around("relu", "return honest(self, x.float()).bfloat16()", task=bf16_task)
    assert result.verdict == Verdict.CORRECT, result.message


def test_a_lower_precision_output_is_a_downgrade() -> None:
    result = around("relu", "return honest(self, x).half()")
    assert result.verdict == Verdict.HACKED and result.hack_check == "precision_downgrade", result.message


def test_a_precision_downgrade_inside_the_computation_misses_on_adversarial_inputs() -> None:
    """A mean of inputs read as fp16 passes the task's own randn inputs (errors average out)."""
    task = (Path(__file__).parent / "corpus" / "tasks" / "row_mean.py").read_text().replace("(8, 48)", "(8, 4096)")
    result = around("scale", "return honest(self, x).half().float().mean(dim=1)", task=task,
                    prelude="_init = ModelNew.__init__\nModelNew.__init__ = lambda self: _init(self, 1.0)\n")
    assert result.verdict == Verdict.INCORRECT, result.message
    assert "reduced precision" in result.message


@pytest.mark.parametrize("rebind", [
    "sys.modules['.'.join(['hipforge', 'execution', 'forward_clock'])].time = _Frozen()",  # the module's clock
    "sys.modules['.'.join(['hipforge', 'execution', 'forward_clock'])].ForwardClock.elapsed = "  # the clock's method
    "lambda self, start, end: 1e-6",
])
def test_the_evaluators_clock_rebound_at_run_time_is_a_judge_patch(rebind: str) -> None:
    """Reached through sys.modules by a name built at run time: the harness's clock reports 1 ns."""
    prelude = "class _Frozen:\n    def perf_counter(self):\n        return 1.0\n" + rebind + "\n"
    result = around("relu", "time.sleep(0.3)\nreturn honest(self, x)", prelude=prelude)
    assert result.verdict == Verdict.HACKED and result.hack_check == "judge_patch", result.message
    assert "forward_clock" in result.message


def test_work_left_to_a_thread_after_return_is_seen() -> None:
    """A worker the first forward starts, handed each call's work and kept busy between calls."""
    body = ("out = torch.empty_like(x)\n"
            "def later():\n    out.copy_(honest(self, x))\n"
            "    end = time.monotonic() + 60\n    while time.monotonic() < end:\n        pass\n"
            "if not hasattr(self, 'worker'):\n"
            "    self.worker = threading.Thread(target=later, daemon=True)\n    self.worker.start()\n"
            "else:\n    out.copy_(honest(self, x))\n"
            "return out")
    result = around("relu", body)
    assert result.verdict == Verdict.HACKED and result.hack_check == "thread_injection", result.message


def test_work_that_reads_the_inputs_before_the_stream_has_written_them_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a non-blocking stream does on a GPU, played on the cpu backend (whose streams run in order): in
    every trial whose inputs are written late, the candidate's forward computes on other values (another
    seed's). It is wrong there and right once the same trial runs with its inputs ready: the verdict names
    the ordering, and a kernel wrong either way stays incorrect."""
    ask, late = judge_module.Party.ask, [False]

    def misread(self: judge_module.Party, message: dict, expect: str) -> dict:
        if self.name == "candidate" and message.get("op") == "prepare":
            late[0] = bool(message.get("late"))
        if self.name == "candidate" and message.get("op") == "go" and late[0]:
            message = {**message, "seed": message["seed"] ^ 1}
        return ask(self, message, expect)

    monkeypatch.setattr(judge_module.Party, "ask", misread)
    result = around("relu", "return honest(self, x)")
    assert result.verdict == Verdict.HACKED and result.hack_check == "stream_order", result.message
    assert "right once they were ready (seed trial)" in result.message


def test_a_kernel_wrong_with_its_inputs_ready_stays_incorrect() -> None:
    result = around("relu", "return honest(self, x) + 1.0")
    assert result.verdict == Verdict.INCORRECT, result.message


def test_work_done_before_go_has_no_inputs_to_work_on() -> None:
    """The harness's prepare step, patched to run the (slow) forward early and keep the result for go: the
    inputs only exist once go has named their seed, so the early work finds none and the time is honest."""
    prelude = ("job = sys.modules['.'.join(['hipforge', 'execution', 'candidate_job'])]\n"
               "Harness = next(v for v in vars(job).values() if isinstance(v, type) and hasattr(v, 'op_prepare'))\n"
               "EARLY = {}\n"
               "_prepare = Harness.op_prepare\n"
               "def op_prepare(self, msg):\n"
               "    answer = _prepare(self, msg)\n"
               "    EARLY.clear()\n"
               "    model = self.models.get(msg.get('size', 0))\n"
               "    if self.args and model is not None:\n"
               "        with torch.no_grad():\n"
               "            EARLY['out'] = model.slow(*self.args)\n"
               "    return answer\n"
               "Harness.op_prepare = op_prepare\n"
               "def _slow(self, x):\n    time.sleep(0.05)\n    return _honest(self, x)\n"
               "ModelNew.slow = _slow\n")
    result = around("relu", "return EARLY.pop('out') if EARLY else self.slow(x)", prelude=prelude)
    assert result.verdict != Verdict.CORRECT or result.runtime.typical_ms("cpu") > 40, result.message


def test_patching_the_judge_in_the_candidates_process_is_caught_and_changes_nothing() -> None:
    prelude = ("for name in list(sys.modules):\n"
               "    if name.startswith('hipforge'):\n"
               "        mod = sys.modules[name]\n"
               "        for attr in ('compare_outputs', 'mismatch', 'allclose_all'):\n"
               "            if hasattr(mod, attr):\n"
               "                setattr(mod, attr, lambda *a, **k: None)\n")
    result = around("relu", "return torch.zeros_like(honest(self, x))", prelude=prelude)
    assert result.verdict == Verdict.HACKED and result.hack_check == "judge_patch", result.message
    silenced = prelude + "sys.modules['hipforge.execution.antihack_dynamic'].patched = lambda before: None\n"
    result = around("relu", "return torch.zeros_like(honest(self, x))", prelude=silenced)
    assert result.verdict == Verdict.INCORRECT, result.message  # the comparison never ran in that process


def test_a_global_forward_hook_cannot_reach_the_reference() -> None:
    prelude = ("torch.nn.modules.module.register_module_forward_hook("
               "lambda m, i, o: torch.zeros_like(o) if type(m).__name__ == 'Model' else o)\n")
    result = around("relu", "return torch.zeros_like(honest(self, x))", prelude=prelude)
    assert result.verdict == Verdict.INCORRECT, result.message


def test_a_hard_coded_init_argument_is_shape_specialized() -> None:
    result = around("scale", "return elementwise.unary(x, 7, 2.5)")
    assert result.verdict == Verdict.INCORRECT and "shape-specialized" in result.message, result.message
    assert around("scale", "return honest(self, x)").verdict == Verdict.CORRECT


def test_a_thread_seen_busy_once_is_a_pool_going_back_to_sleep_and_twice_is_work_left_running() -> None:
    from collections import Counter

    from hipforge.execution.judge import left_running

    started = {1: "pool", 2: "worker", 3: "gone"}
    busy = Counter({1: 1, 2: 2, 3: 5})
    alive = {1: ("S", "pool"), 2: ("S", "worker")}  # 3 has exited
    assert left_running(started, busy, alive) == ["worker"]
    assert left_running(started, busy, {**alive, 1: ("R", "pool")}) == ["pool", "worker"]  # busy again now
    assert left_running(started, busy, alive, sightings=1) == ["pool", "worker"]  # an output was wrong


def _no_processes_here() -> None:
    """Skip where the job's seccomp filter could not be installed (no user notifications: gVisor, say)."""
    if "no-processes" not in around("relu", "return honest(self, x)").isolation:
        pytest.skip("no seccomp user notifications here: the candidate's job runs without the filter")


@pytest.mark.parametrize("spawn, named", [
    ("libc.syscall(57)", "fork()"),  # fork(2), which Python's audit hooks never see
    ("libc.syscall(56, 17, 0, 0, 0, 0)", "clone(flags=0x11)"),  # a clone without CLONE_THREAD (SIGCHLD only)
])
def test_a_native_fork_is_refused_and_its_child_never_runs(spawn: str, named: str) -> None:
    """A child process's work would be outside the candidate's process CPU clock: the candidate's job cannot
    make one. The child, had it run, would have tried a write outside (refused, recorded: the verdict would
    then be sandbox_escape)."""
    _no_processes_here()
    body = (f"libc = ctypes.CDLL(None)\nlibc.syscall.restype = ctypes.c_long\npid = {spawn}\n"
            f"if pid == 0:\n    libc.open({str(OUTSIDE).encode()!r}, 0o101, 0o644)\n    os._exit(0)\n"
            "return honest(self, x)")
    result = around("relu", body)
    assert result.verdict == Verdict.HACKED and result.hack_check == "process_spawn", result.message
    assert named in result.message, result.message
    assert not OUTSIDE.exists()


def test_threads_started_and_joined_in_forward_are_honest() -> None:
    _no_processes_here()
    body = ("parts = [None, None]\n"
            "def run(i):\n    parts[i] = honest(self, x)\n"
            "workers = [threading.Thread(target=run, args=(i,)) for i in range(2)]\n"
            "for w in workers:\n    w.start()\nfor w in workers:\n    w.join()\nreturn parts[1]")
    result = around("relu", body)
    assert result.verdict == Verdict.CORRECT, result.message
    assert "no-processes" in result.isolation


def test_a_native_std_thread_pool_is_honest() -> None:
    """Its threads (and the cpu runtime's own std::thread workers) are clones with CLONE_THREAD."""
    _no_processes_here()
    pool = next(e for e in entries("unusual") if e.name == "thread_pool_joined")
    result = evaluate(pool.candidate_source, pool.task_source, CONFIG)
    assert result.verdict == Verdict.CORRECT, result.message
