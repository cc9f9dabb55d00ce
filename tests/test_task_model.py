"""The task model: static checks, identity, smoke scale, and the sandboxed reference run."""

from __future__ import annotations

import os
import textwrap

import pytest

from hipforge.tasks import (
    TaskError,
    check_source,
    check_task,
    check_tasks,
    normalize_source,
    shutdown_workers,
    size_constants,
    smoke_ladder,
    smoke_scale,
    task_id,
)


def make_task(forward: str = "return torch.relu(x)", *, init: str = "pass", module: str = "",
              inputs: str = "return [torch.rand(batch_size, dim)]") -> str:
    """A KernelBench-format source with the given bodies (single lines or dedented blocks)."""
    def body(code: str) -> str:
        return textwrap.indent(textwrap.dedent(code).strip(), " " * 8)

    return f"""import torch
import torch.nn as nn
{module}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
{body(init)}

    def forward(self, x):
{body(forward)}

batch_size = 16
dim = 4096

def get_inputs():
{body(inputs)}

def get_init_inputs():
    return []
"""


GOOD = make_task()


def rejected(source: str, **kwargs: object) -> TaskError:
    with pytest.raises(TaskError) as info:
        check_task(source, "bad", **kwargs)  # type: ignore[arg-type]
    return info.value


# --- static checks ---------------------------------------------------------------------------

def test_syntax_error_names_the_line() -> None:
    err = rejected(GOOD.replace("def forward(self, x):", "def forward(self, x)"))
    assert err.code == "syntax_error"
    assert "line 10" in err.message and "def forward(self, x)" in err.message
    assert str(err).startswith("syntax_error: line 10")


@pytest.mark.parametrize(("remove", "code", "name"), [
    ("class Model(nn.Module):", "missing_model", "Model"),
    ("def get_inputs():", "missing_get_inputs", "get_inputs"),
    ("def get_init_inputs():", "missing_get_init_inputs", "get_init_inputs"),
])
def test_missing_names(remove: str, code: str, name: str) -> None:
    renamed = remove.replace("Model", "Net").replace("get_", "make_")
    err = rejected(GOOD.replace(remove, renamed))
    assert err.code == code and f"`{name}`" in err.message


@pytest.mark.parametrize(("snippet", "named"), [
    ("import subprocess", "subprocess"),
    ("import os\nos.system('ls')", "os.system"),
    ("from socket import socket", "socket"),
    ("eval('1 + 1')", "eval"),
    ("open('/tmp/x', 'w').close()", "open() for writing"),
])
def test_banned_constructs(snippet: str, named: str) -> None:
    err = rejected(make_task(module=snippet))
    assert err.code == "banned_construct" and named in err.message and "line" in err.message


def test_allowed_lookalikes_pass_static_checks() -> None:
    # model.eval() and reading files are fine; only the builtins and writing modes are banned
    check_source(make_task(module="m = nn.Linear(2, 2).eval()\nopen(__name__ and '/dev/null').close()"))


def test_task_id_ignores_comments_docstrings_and_layout() -> None:
    noisy = GOOD.replace("class Model(nn.Module):", 'class Model(nn.Module):\n    """A docstring."""  # note')
    noisy = noisy.replace("batch_size = 16", "# sizes\nbatch_size   =   16  # rows")
    assert task_id(noisy) == task_id(GOOD)
    assert len(task_id(GOOD)) == 16 and int(task_id(GOOD), 16) >= 0
    assert '"""' not in normalize_source(noisy) and "#" not in normalize_source(noisy)
    assert task_id(GOOD.replace("torch.relu", "torch.sigmoid")) != task_id(GOOD)
    assert task_id(GOOD.replace("batch_size = 16", "batch_size = 32")) != task_id(GOOD)


def test_size_constants() -> None:
    source = "M = 1024 * 2\nshape = (M, 3)\nsizes = [8] * 3\nscale = 0.5\nflag = True\nname = 'x'\n"
    source += "h, w = 32, 64\n"
    assert size_constants(source) == {"M": 2048, "shape": (2048, 3), "sizes": (8, 8, 8), "scale": 0.5,
                                      "h": 32, "w": 64}


# --- smoke scale -----------------------------------------------------------------------------

CONV = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, groups=groups)

    def forward(self, x):
        return self.conv(x)

batch_size = 64  # big batch
in_channels = 3
out_channels = 256
kernel_size = 3
stride = 2
groups = 1
height = width = 1024
dim_ratio = 0.5

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width), torch.rand(4096)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, groups]
"""


def test_smoke_shrinks_big_sizes_and_keeps_hyperparameters() -> None:
    scaled = smoke_scale(CONV)
    constants = size_constants(scaled.source)
    assert constants["batch_size"] == 2
    assert constants["height"] == constants["width"] and 16 <= constants["height"] < 64
    assert 16 <= constants["out_channels"] < 64
    assert {k: constants[k] for k in ("in_channels", "kernel_size", "stride", "groups", "dim_ratio")} == {
        "in_channels": 3, "kernel_size": 3, "stride": 2, "groups": 1, "dim_ratio": 0.5}
    assert scaled.changed["batch_size"] == (64, 2) and "kernel_size" not in scaled.changed
    assert scaled.changed["get_inputs:4096"][0] == 4096
    assert "# big batch" in scaled.source  # text edits keep comments and layout


def test_smoke_keeps_divisibility_and_equal_sizes() -> None:
    source = CONV.replace("groups = 1", "groups = 8").replace("in_channels = 3", "in_channels = 96")
    constants = size_constants(smoke_scale(source).source)
    assert constants["in_channels"] % 8 == 0 and constants["out_channels"] % 8 == 0
    odd = "M = 8205\nK = 2949\nbatch = 1024\n"
    constants = size_constants(smoke_scale(odd).source)
    assert constants["M"] % 2 == 1 and constants["K"] % 2 == 1 and constants["M"] < 64


def test_smoke_ladder_goes_from_aggressive_to_mild() -> None:
    ladder = smoke_ladder(CONV)
    assert len({s.source for s in ladder}) == len(ladder) > 3
    heights = [size_constants(s.source)["height"] for s in ladder]
    assert heights[0] == min(heights) == 16 and heights[-1] == 1024
    assert ladder[-1].changed == {"batch_size": (64, 2)}  # the mildest rung only shrinks the batch


# --- sandboxed reference run -----------------------------------------------------------------

def test_good_task_runs_at_smoke_scale() -> None:
    run = check_task(GOOD, "relu")
    assert run.output_shapes == [(2, 16)] and run.output_dtypes == ["torch.float32"]
    assert run.constants == {"batch_size": (16, 2), "dim": (4096, 16)}
    assert run.task_id == task_id(GOOD) and "dim = 16" in run.source and run.seconds >= 0
    full = check_task(GOOD, "relu", scale="full")
    assert full.output_shapes == [(16, 4096)] and full.constants == {} and full.source == GOOD


@pytest.mark.parametrize(("kwargs", "code", "named"), [
    ({"init": "raise ValueError('bad config')"}, "init_error", "ValueError: bad config"),
    ({"inputs": "return [torch.rand(batch_size, dim) @ torch.rand(3, 3)]"}, "inputs_error", "RuntimeError"),
    ({"forward": "return x @ torch.rand(3, 5)"}, "forward_error", "forward raised RuntimeError: mat1"),
    ({"forward": "return x.sum().item()"}, "non_tensor_output", "float"),
    ({"forward": "return (x, None)"}, "non_tensor_output", "output 1 is a NoneType"),
    ({"forward": "return x * float('nan')"}, "non_finite_output", "output 0 contains NaN"),
    ({"forward": "return (x, x / 0)"}, "non_finite_output", "output 1 contains Inf"),
    ({"module": "calls = [0]", "forward": "calls[0] += 1\nreturn x + calls[0]"}, "non_deterministic",
     "two runs with seed 0 differ"),
])
def test_bad_reference_is_rejected(kwargs: dict[str, str], code: str, named: str) -> None:
    err = rejected(make_task(**kwargs))
    assert err.code == code and named in err.message, str(err)


def test_forward_error_names_the_source_line() -> None:
    err = rejected(make_task("y = x @ torch.rand(3, 5)\nreturn y"))
    assert "[line 11: y = x @ torch.rand(3, 5)]" in err.message


def test_infinite_loop_is_too_slow() -> None:
    err = rejected(make_task("while True:\n    pass"), time_limit_s=2)
    assert err.code == "too_slow" and "2 s" in err.message


@pytest.mark.parametrize("forward", ["return torch.empty(2**34) + x.sum()", "b = bytearray(2**33)\nreturn x"])
def test_huge_allocation_is_too_much_memory(forward: str) -> None:
    err = rejected(make_task(forward), memory_limit_mb=512)
    assert err.code == "too_much_memory" and "512 MB" in err.message, str(err)


@pytest.mark.parametrize(("module", "forward", "signal_name"), [
    ("import ctypes", "ctypes.string_at(0)\nreturn x", "SIGSEGV"),
    ("import os", "os.abort()", "SIGABRT"),
])
def test_crash_is_contained(module: str, forward: str, signal_name: str) -> None:
    err = rejected(make_task(forward, module=module))
    assert err.code == "crashed" and signal_name in err.message
    assert check_task(GOOD).output_shapes == [(2, 16)]  # the next task runs as usual


def test_killing_the_worker_does_not_kill_the_caller() -> None:
    """In a PID namespace the worker is its init, which the job cannot even signal; without one it dies."""
    try:
        check_task(make_task("ctypes.CDLL(None).kill(os.getppid(), 9)\nreturn x", module="import ctypes, os"))
    except TaskError as err:
        assert err.code == "crashed" and "worker" in err.message
    assert check_task(GOOD).output_shapes == [(2, 16)]


def test_sandbox_scrubs_secrets_and_limits_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    shutdown_workers()  # a fresh worker sees the environment as it is now
    monkeypatch.setenv("HIPFORGE_TEST_API_KEY", "sk-do-not-leak")
    monkeypatch.setenv("HIPFORGE_TEST_PLAIN", "visible")
    forward = """env = "".join(f"{k}={v}" for k, v in os.environ.items()).encode()
return torch.zeros(env.count(b'sk-do-not-leak'), env.count(b'visible'), torch.get_num_threads())"""
    run = check_task(make_task(forward, module="import os"), "env")
    assert run.output_shapes == [(0, 1, 1)]
    assert os.environ["HIPFORGE_TEST_API_KEY"] == "sk-do-not-leak"  # the caller's own env is untouched
    shutdown_workers()


def test_check_tasks_reports_each_task() -> None:
    items = [("good", GOOD), ("nan", make_task("return x * float('nan')")), ("syntax", "def (")]
    results = dict(check_tasks(items, workers=2))
    assert set(results) == {"good", "nan", "syntax"}
    assert results["good"].output_shapes == [(2, 16)]  # type: ignore[union-attr]
    assert isinstance(results["nan"], TaskError) and results["nan"].code == "non_finite_output"
    assert isinstance(results["syntax"], TaskError) and results["syntax"].code == "syntax_error"
