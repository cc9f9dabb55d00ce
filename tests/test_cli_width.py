"""`hipforge report` and `hipforge tasks` on 80- and 120-column terminals: nothing cut mid-word (rich marks a
cut with '…'), no line wider than the terminal, and an empty listing that says why."""

from __future__ import annotations

import pytest

from hipforge import cli
from hipforge.bench.report import TOLERANCES
from hipforge.store import Warehouse
from hipforge.store.reports import LEVEL_COLUMNS, save_report

CHECKPOINT = "checkpoint:sft-0123456789ab"  # the widest model name a report carries


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, *args: str) -> str:
    monkeypatch.setattr(cli.console, "width", width)
    with pytest.raises(SystemExit) as exited:
        cli.app(list(args), prog_name="hipforge")
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= width, out
    return out


@pytest.mark.parametrize("width", [80, 120])
def test_report_fits(warehouse: Warehouse, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                     width: int) -> None:
    levels = [{c: 0.125 for c in LEVEL_COLUMNS} | {"level": level, "tolerance": tol, "tasks": 19}
              for level in (1, 2, 3) for tol in TOLERANCES]
    save_report(warehouse, "run-1", CHECKPOINT, "kernelbench", "cpu", "gfx950", [], levels)
    out = run(capsys, monkeypatch, width, "report", "--warehouse", str(warehouse.path))
    assert "fast_0.5" in out and "compiled" in out and "seed RL" in out


@pytest.mark.parametrize("width", [80, 120])
def test_tasks_fit_and_keep_their_reasons_whole(warehouse: Warehouse, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    reason = "forward raised RuntimeError: mat1 and mat2 shapes cannot be multiplied [line 12: self.fc(x)]"
    warehouse.insert("tasks", [{"task_id": "a1b2c3d4e5f6a7b8", "name": "level3/long_model_name_with_many_parts",
                                "origin": "synthetic", "source": "#", "status": "rejected",
                                "reject_code": "forward_error", "reject_reason": reason}], "run-1")
    out = run(capsys, monkeypatch, width, "tasks", "--warehouse", str(warehouse.path))
    assert "1 task\n" in out or " 1 task " in out, out  # not "1 tasks"
    assert "a1b2c3d4e5f6a7b8" in out and "[line" in out  # the id whole; the reason's brackets are not markup
    words = " ".join(line.split("│")[-2].strip() for line in out.splitlines() if line.count("│") > 1)
    assert " ".join(words.split()).endswith(reason), out  # wrapped at words, in full


def test_an_origin_with_no_tasks_says_how_to_load_it(warehouse: Warehouse, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse.insert("tasks", [{"task_id": "a1b2c3d4", "name": "relu", "origin": "reference", "source": "#",
                                "status": "accepted"}], "run-1")
    out = run(capsys, monkeypatch, 80, "tasks", "--origin", "kernelbench", "--warehouse", str(warehouse.path))
    assert "reference" in out and "HIPFORGE_KERNELBENCH" in out and "kernelbench_tasks" in out
