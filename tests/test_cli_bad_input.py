"""Bad files given to `hipforge eval` and `hipforge translate`: one line naming the file and whose fault it is,
exit code 1, no traceback, and nothing evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hipforge.cli import app

TASK = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\n\n\ndef get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
        "def get_init_inputs():\n    return []\n")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    made = {"task": TASK.encode(), "binary": bytes(range(256)) * 4, "syntax": b"def forward(:\n",
            "no_model": b"import torch\n\ndef get_inputs():\n    return []\n",
            "candidate": b"import torch\n"}
    paths = {}
    for name, data in made.items():
        paths[name] = tmp_path / f"{name}.py"
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize(("command", "candidate", "task", "blamed"), [
    ("eval", "binary", "task", "candidate must be a Python source file"),
    ("eval", "candidate", "binary", "task must be a Python source file"),
    ("eval", "candidate", "syntax", "not a usable task (syntax_error: line 1"),
    ("eval", "candidate", "no_model", "not a usable task (missing_model"),
    ("translate", None, "syntax", "not a usable task (syntax_error"),
    ("translate", None, "binary", "task must be a Python source file"),
])
def test_a_bad_file_is_one_line_naming_it(files: dict[str, Path], command: str, candidate: str | None, task: str,
                                          blamed: str) -> None:
    args = [command, str(files[candidate]), "--task", str(files[task])] if candidate else [command, str(files[task])]
    code, output = invoke(*args)
    assert code == 1, output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    blamed_file = files[candidate] if candidate and "candidate must" in blamed else files[task]
    assert str(blamed_file) in output and blamed in output, output


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    code, output = invoke("translate", str(tmp_path / "absent.py"))
    assert code == 1 and "absent.py is not a file" in output
