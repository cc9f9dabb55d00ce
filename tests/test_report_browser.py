"""The KernelBench report end to end: the real webserver and daemon, a run launched from the UI's launchpad in
headless Chromium, its plots on the asset's page; then its rows, the comparison with the previous report and a
kernel's lineage (task, evaluation, Dagster run) in the metadata and on the CLI."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from hipforge.bench.models import OFFLINE
from hipforge.bench.report import level_rows
from hipforge.cli import app
from hipforge.store import Warehouse
from hipforge.store.reports import save_report
from tests.webserver import CHROMIUM, CHROMIUM_ARGS, REPO_ROOT, dagster_webserver, instance_at

pytestmark = pytest.mark.browser
TASKS = ["elementwise/relu", "elementwise/sigmoid_scale"]  # an L1 operator and an L2 fusion, cheap to build
ONLY = ", ".join(TASKS)
LAUNCH_CONFIG = (f"ops: {{kernelbench_report: {{config: {{source: '', levels: [1, 2], only: [{ONLY}]}}}}}}\n"
                 "resources: {executor: {config: {timed_trials: 5}}}\n")
PLOTS = {"compile_rates": "compile rate per level", "fast_p": "fast_p curves"}  # metadata key -> image alt text


def _earlier_report(db: Path) -> None:
    """A previous report of the same model in which the translator declined relu."""
    rows = [{"task_id": "t", "task_name": TASKS[0], "level": 1, "kernel_id": None, "eval_id": None,
             "declined": "an older translator declined", "verdict": None, "compiled": False, "correct_strict": False,
             "correct_loose": False, "max_abs_err": None, "max_rel_err": None, "speedup_eager": None,
             "speedup_compiled": None}]
    save_report(Warehouse(db), "earlier-run", OFFLINE, "reference", "cpu", "gfx950", rows, level_rows(rows))


def _launch_from_ui(page, url: str) -> None:  # noqa: ANN001  (a playwright page)
    """Materialize's dropdown -> Open launchpad: pick the model partition, write the config, launch."""
    page.goto(f"{url}/assets/kernelbench_report", wait_until="domcontentloaded")
    skip = page.get_by_role("button", name="Skip")  # a fresh instance's newsletter dialog covers the page
    skip.wait_for(timeout=90_000)
    skip.click()
    buttons = page.get_by_role("button")
    labels = [b.inner_text() for b in buttons.all()]
    buttons.nth(labels.index("Materialize…") + 1).click()
    page.get_by_text("Open launchpad").click()
    # the report's upstream checkpoints were never trained here: only checkpoint partitions read them
    page.get_by_role("button", name="Confirm").click()
    _pick_partition(page)
    page.locator(".CodeMirror").first.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(LAUNCH_CONFIG)
    page.get_by_text("No errors").wait_for(timeout=30_000)
    page.get_by_role("button", name="Materialize").last.click()


def _pick_partition(page, attempts: int = 6) -> None:  # noqa: ANN001
    """Type the model into the launchpad's partition box and pick it from the suggestions (which appear once
    the partitions have loaded: type again until they do)."""
    box, option = page.get_by_placeholder("Partition"), page.get_by_text(OFFLINE, exact=True).first
    for attempt in range(attempts):
        box.click()
        box.fill("")
        box.press_sequentially(OFFLINE)
        try:
            option.click(timeout=5_000)
            return
        except Exception:  # noqa: BLE001  no suggestion yet
            if attempt == attempts - 1:
                raise


def _wait_for_plots(page, url: str, timeout_s: float = 420) -> None:  # noqa: ANN001
    """The daemon runs the launched run; the partition's page shows its plots behind [Show Markdown]."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.goto(f"{url}/assets/kernelbench_report?view=partitions&partition={OFFLINE}", wait_until="domcontentloaded")
        try:
            page.get_by_text("compile_rates", exact=True).wait_for(timeout=15_000)
            break
        except Exception:  # noqa: BLE001  not materialized yet: look again
            if time.monotonic() > deadline:
                raise
    for key, alt in PLOTS.items():
        page.locator("tr", has=page.get_by_text(key, exact=True)).first.get_by_text("[Show Markdown]").click()
        image = page.get_by_alt_text(alt).first
        image.wait_for(timeout=30_000)
        assert image.evaluate("img => img.naturalWidth") > 300  # a decoded PNG, not a broken image
        page.keyboard.press("Escape")
        image.wait_for(state="detached", timeout=10_000)


def _finished_run(home: Path, monkeypatch: pytest.MonkeyPatch, timeout_s: float = 60.0) -> dg.DagsterRun:
    deadline = time.monotonic() + timeout_s
    while True:
        with instance_at(home, monkeypatch) as instance:
            (run,) = instance.get_runs()
        if run.is_finished or time.monotonic() > deadline:
            return run
        time.sleep(1.0)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (make setup as root)")
def test_report_launched_from_the_ui_shows_its_plots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import sync_playwright

    home, db = tmp_path / "home", tmp_path / "w.duckdb"
    home.mkdir()
    shutil.copy(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    with instance_at(home, monkeypatch) as instance:
        instance.add_dynamic_partitions("models", [OFFLINE])
    _earlier_report(db)
    env = {"HIPFORGE_WAREHOUSE": str(db), "HIPFORGE_KERNELBENCH": ""}
    with dagster_webserver(home, env, daemon=True) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        _launch_from_ui(page, url)
        _wait_for_plots(page, url)
        browser.close()
        run = _finished_run(home, monkeypatch)  # the run ends just after its materialization: wait for it

    with instance_at(home, monkeypatch) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("kernelbench_report"))
    assert run.status == dg.DagsterRunStatus.SUCCESS and run.tags["dagster/partition"] == OFFLINE
    meta = event.asset_materialization.metadata
    assert meta["task_set"].value == "reference" and "No KernelBench source configured" in meta["note"].value
    l1 = next(r.data for r in meta["levels"].value.records if r.data["level"] == 1 and r.data["tolerance"] == 1e-4)
    assert (l1["tasks"], l1["compiled"], l1["correct"]) == (1, 1.0, 1.0)  # relu: compiled and exact
    assert "seed RL" in meta["vs_seed"].value
    assert "0.00 → 1.00 (+1.00)" in meta["vs_previous_report"].value  # L1 correct rate against the earlier report

    with Warehouse(db).connect(read_only=True) as con:
        rows = con.execute("SELECT task_name, kernel_id, eval_id, verdict FROM report_tasks WHERE run_id = ? "
                           "ORDER BY level", [run.run_id]).fetchall()
        eval_run = con.execute("SELECT run_id FROM evaluations WHERE eval_id = ?", [rows[0][2]]).fetchone()[0]
    assert [r[0] for r in rows] == TASKS and rows[0][3] == "correct" and eval_run == run.run_id
    kernel = rows[0][1]  # its row in the metadata names its evaluation and the run that judged it
    assert f"| {kernel} |" in meta["kernels"].value and f"/runs/{run.run_id}" in meta["kernels"].value
    printed = CliRunner().invoke(app, ["lineage", kernel, "--warehouse", str(db)])
    assert printed.exit_code == 0 and "translated_from" in printed.output and "evaluated_by" in printed.output
    assert f"run {run.run_id[:8]}" in printed.output
    shown = CliRunner().invoke(app, ["report", "--model", OFFLINE, "--warehouse", str(db)])
    assert shown.exit_code == 0 and "seed RL" in shown.output
