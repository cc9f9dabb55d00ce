"""What a hostile candidate can do to the evaluator: each hazard is contained and classified, and the
next evaluation still works. Hazards are plain Python (no build) with the static scan off, so the
sandbox itself, not the source scan, has to stop them.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.execution.verdict import EvalResult, Verdict
from hipforge.sandbox.client import namespaces_available
from hipforge.sandbox.env import scrubbed_env
from tests.corpus import entries

RELU = next(e for e in entries("honest") if e.name == "relu")
CONFIG = EvalConfig(timed_trials=3, warmup=1, gate=False, static_checks=False, run_timeout_s=10,
                    memory_limit_mb=3072)
ESCAPE = Path("/tmp/hipforge-sandbox-test-escape.txt")


def hostile(body: str) -> str:
    """A candidate whose forward runs ``body`` (indented for you)."""
    return ("import os\nimport torch\nimport torch.nn as nn\n\n\n"
            f"class ModelNew(nn.Module):\n    def forward(self, x):\n{textwrap.indent(body, ' ' * 8)}\n")


def run(body: str, config: EvalConfig = CONFIG) -> EvalResult:
    return evaluate(hostile(body), RELU.task_source, config)


def sandbox_processes() -> list[int]:
    """Processes still running as the sandbox uid below this test process (other test processes running
    beside it have sandboxes of their own)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = os.stat(f"/proc/{pid}").st_uid
        except OSError:
            continue
        if uid == CONFIG.sandbox_uid and os.getpid() in _ancestors(int(pid)):
            found.append(int(pid))
    return found


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        chain.append(pid)
    return chain


@pytest.fixture(autouse=True)
def _no_escape_file():
    ESCAPE.unlink(missing_ok=True)
    yield
    ESCAPE.unlink(missing_ok=True)


def test_segfault_is_a_runtime_error_and_the_next_run_works() -> None:
    result = run("import faulthandler\nfaulthandler._sigsegv()")
    assert result.verdict == Verdict.RUNTIME_ERROR and "SIGSEGV" in result.message
    honest = evaluate(RELU.candidate_source, RELU.task_source, EvalConfig(timed_trials=3, gate=False))
    assert honest.verdict == Verdict.CORRECT, honest.message


def test_infinite_loop_times_out() -> None:
    result = run("while True:\n    pass", EvalConfig(**{**CONFIG.to_dict(), "run_timeout_s": 3}))
    assert result.verdict == Verdict.TIMEOUT and result.phase == "check"
    assert run("return torch.relu(x)").verdict == Verdict.HACKED  # next one runs (and is a bypass)


def test_memory_hog_hits_the_limit() -> None:
    config = EvalConfig(**{**CONFIG.to_dict(), "memory_limit_mb": 2048, "run_timeout_s": 120})
    result = run("hog = [torch.ones(1 << 24) for _ in range(256)]  # 16 GB, 64 MB a time\nreturn x", config)
    assert result.verdict == Verdict.RUNTIME_ERROR and "out of memory" in result.message


def test_python_fork_is_blocked() -> None:
    result = run("os.fork()\nreturn torch.relu(x)")
    assert result.verdict == Verdict.HACKED and result.hack_check == "process_spawn"


@pytest.mark.skipif(not namespaces_available(), reason="RLIMIT_NPROC binds only below root (uid drop)")
def test_native_fork_bomb_is_contained() -> None:
    result = run("import ctypes\nlibc = ctypes.CDLL(None)\nwhile True:\n    libc.fork()",
                 EvalConfig(**{**CONFIG.to_dict(), "run_timeout_s": 4, "max_processes": 64}))
    if "no-processes" in result.isolation:  # the seccomp filter refuses the first fork: no bomb at all
        assert result.verdict == Verdict.HACKED and result.hack_check == "process_spawn", result.message
    else:  # RLIMIT_NPROC caps it until the timeout
        assert result.verdict == Verdict.TIMEOUT
    assert sandbox_processes() == []
    assert run("return torch.relu(x)").verdict == Verdict.HACKED


def test_write_outside_the_work_dir() -> None:
    result = run(f"open({str(ESCAPE)!r}, 'w').write('pwned')\nreturn torch.relu(x)")
    assert result.verdict == Verdict.HACKED and result.hack_check == "file_write"
    assert not ESCAPE.exists()
    inside = run("open('scratch.txt', 'w').write('fine')\nreturn torch.relu(x)")
    assert inside.hack_check == "code_bypass"  # writing its own work dir is allowed


def test_native_write_is_refused_and_recorded() -> None:
    result = run(f"import ctypes\nfd = ctypes.CDLL(None).open({str(ESCAPE).encode()!r}, 0o101, 0o644)\n"
                 "assert fd < 0, 'native write got through'\nreturn torch.relu(x)")
    assert result.hack_check == "sandbox_escape", result.message  # refused, and the refusal is the verdict
    assert str(ESCAPE) in result.message and "write-recorder" in result.isolation
    assert not ESCAPE.exists()


def test_secrets_are_not_in_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPFORGE_TEST_API_KEY", "sekrit-4411")
    assert "HIPFORGE_TEST_API_KEY" not in scrubbed_env()
    result = run("print(os.environ.get('HIPFORGE_TEST_API_KEY'), dict(os.environ))\nreturn torch.relu(x)")
    assert result.verdict == Verdict.HACKED and result.hack_check == "secret_access"
    assert "None" in result.output_tail and "sekrit-4411" not in result.output_tail
    proc = run("print(open('/proc/self/environ').read())\nreturn torch.relu(x)")
    assert proc.hack_check == "secret_access"


def test_network_is_blocked() -> None:
    result = run("import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=1)\nreturn x")
    assert result.verdict == Verdict.HACKED and result.hack_check == "network"
    if namespaces_available():
        assert "netns" in result.isolation


def test_rlimits_mode_guards_the_network_in_process() -> None:
    config = EvalConfig(**{**CONFIG.to_dict(), "isolation": "rlimits"})
    result = run("import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=1)\nreturn x", config)
    assert result.hack_check == "network" and "netns" not in result.isolation
    assert "rlimit:core,fsize,as" in ",".join(result.isolation)
