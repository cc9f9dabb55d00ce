"""`make ui` stops on Ctrl-C and on SIGTERM, also where it was started with SIGINT ignored (a script's
background job, nohup): there `dagster dev` alone ignored both for minutes (it maps SIGTERM onto SIGINT's
handler), and scripts/dagster_dev.py restores the default before it execs `dagster dev`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.webserver import REPO_ROOT, free_port


def _group(pgid: int) -> list[psutil.Process]:
    alive = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid:
                alive.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


def _ignoring_sigint() -> None:  # what a shell without job control gives its background commands
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_make_ui_stops_with_its_webserver_daemon_and_code_servers(stop: str, tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "HIPFORGE_WAREHOUSE": str(tmp_path / "w.duckdb"),
           "HIPFORGE_INBOX": str(tmp_path / "inbox")}
    ui = subprocess.Popen([sys.executable, str(REPO_ROOT / "scripts" / "dagster_dev.py"), "-h", "127.0.0.1", "-p",
                           str(port), "-m", "hip_assets.definitions"], cwd=tmp_path, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                          preexec_fn=_ignoring_sigint)  # noqa: PLW1509  (single-threaded here)
    try:
        deadline = time.monotonic() + 420  # the code location loads slowly on busy cores
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5):
                    break
            except OSError:
                assert ui.poll() is None and time.monotonic() < deadline, "dagster dev did not come up"
                time.sleep(1)
        if stop == "ctrl-c":
            os.killpg(ui.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole foreground group
        else:
            ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=90)  # dagster dev gives each service 60 s before it kills it
        gone_by = time.monotonic() + 30  # the code server's own children notice their parent's exit
        while (left := _group(ui.pid)) and time.monotonic() < gone_by:
            time.sleep(1)
        assert not left, f"processes of `make ui` outlived it: {[p.cmdline()[:4] for p in left]}"
    finally:
        if ui.poll() is None or _group(ui.pid):
            os.killpg(ui.pid, signal.SIGKILL)
