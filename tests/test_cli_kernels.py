"""`hipforge translate` then `hipforge eval` on the kernel it wrote: both judge the task the same way and say
at what size and protocol they ran (they used to time one kernel at two sizes without saying so)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from hipforge.cli import app
from hipforge.tasks.library import library_task


def test_translate_and_eval_run_the_task_alike_and_say_how(tmp_path: Path) -> None:
    task = tmp_path / "gelu.py"
    task.write_text(library_task("elementwise/gelu_tanh").source)
    translated = CliRunner().invoke(app, ["translate", str(task)])
    assert translated.exit_code == 0, translated.output
    kernel = tmp_path / "gelu_hip.py"
    assert kernel.is_file() and "ran at the task's smoke scale (cpu backend)" in translated.output
    evaluated = CliRunner().invoke(app, ["eval", str(kernel), "--task", str(task)])
    assert evaluated.exit_code == 0, evaluated.output
    said = [line for line in evaluated.output.splitlines() if line.startswith("ran at ")]
    assert said == [line for line in translated.output.splitlines() if line.startswith("ran at ")]
    assert "fiber-emulated rankings" in said[0]
