"""Bad files given to the `hipforge` command, through its real entry point (the console script calls `app()`):
each ends in one line on stderr that names the file and blames the right party, exit code 1, no traceback, and
nothing evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest

from hipforge.cli import app

TASK = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\n\n\ndef get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
FILES = {
    "task.py": TASK.encode(),
    "candidate.py": b"import torch\n",
    "binary.py": bytes(range(256)) * 4,
    "prose.txt": b"Multiply the two matrices, then apply a ReLU.\n",  # a task that is not Python
    "syntax.py": b"def forward(:\n",
    "no_model.py": b"import torch\n\ndef get_inputs():\n    return []\n",
    "no_inputs.py": TASK.split("def get_inputs")[0].encode(),
    # parses and has everything, but cannot run: the task's fault, not a candidate's runtime_error
    "raises.py": TASK.replace("torch.relu(x)", "x.no_such_method()").encode(),
    # a good task the translator cannot trace (data-dependent shapes): torch prints a traceback of its own
    "nonzero.py": TASK.replace("torch.relu(x)", "torch.nonzero(x > 0).float()")
    .replace("    def forward", "    def __init__(self):\n        super().__init__()\n\n    def forward").encode(),
}
# (arguments, the file the error must name, the party it must blame)
CASES = [
    (["eval", "binary.py", "--task", "task.py"], "binary.py", "candidate"),
    (["eval", "absent.py", "--task", "task.py"], "absent.py", "candidate"),
    (["eval", "candidate.py", "--task", "binary.py"], "binary.py", "task"),
    (["eval", "candidate.py", "--task", "prose.txt"], "prose.txt", "task"),
    (["eval", "candidate.py", "--task", "no_model.py"], "no_model.py", "task"),
    (["eval", "candidate.py", "--task", "no_inputs.py"], "no_inputs.py", "task"),
    (["eval", "candidate.py", "--task", "raises.py"], "raises.py", "task"),
    (["eval", "candidate.py", "--task", "absent.py"], "absent.py", "task"),
    (["translate", "syntax.py"], "syntax.py", "task"),
    (["translate", "binary.py"], "binary.py", "task"),
    (["translate", "prose.txt"], "prose.txt", "task"),
    (["translate", "absent.py"], "absent.py", "task"),
    (["translate", "nonzero.py"], "nonzero.py", "translator"),
    (["show", "abcd", "--warehouse", "binary.py"], "binary.py", "warehouse"),
    (["lineage", "abcd", "--warehouse", "absent.py"], "absent.py", "warehouse"),
    (["tasks", "--warehouse", "prose.txt"], "prose.txt", "warehouse"),
    (["report", "--warehouse", "candidate.py"], "candidate.py", "warehouse"),
]
PARTIES = ("candidate", "task", "warehouse", "translator")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize(("args", "named", "blamed"), CASES, ids=[" ".join(c[0][:2]) + f" {c[1]}" for c in CASES])
def test_a_bad_file_is_one_line_naming_it(folder: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                          named: str, blamed: str) -> None:
    argv = [str(folder / a) if (folder / a).suffix else a for a in args]  # file names become paths
    with pytest.raises(SystemExit) as exited:  # an exception that escaped would fail here, shown in full
        app(argv, prog_name="hipforge")
    out, err = capsys.readouterr()
    assert exited.value.code == 1, out + err
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err
    assert str(folder / named) in err, err
    reason = err.replace(str(folder / named), "")  # file names like candidate.py blame no one
    assert blamed in reason and not any(p in reason for p in PARTIES if p != blamed), err  # one party
