"""Start the real Dagster webserver (and optionally the daemon) on a free loopback port for tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dagster_webserver(home: Path, env: dict[str, str], daemon: bool = False,
                      overrides: dict[str, dict[str, Any]] | None = None) -> Iterator[str]:
    """Yield the base URL of a webserver serving hip_assets.definitions with DAGSTER_HOME=home; `overrides`
    updates sections of the checkout's dagster.yaml for a test's own instance."""
    home.mkdir(parents=True, exist_ok=True)
    if home.resolve() != REPO_ROOT:  # a test's own instance; the checkout's serves what `make demo` stored
        import yaml

        config = yaml.safe_load((REPO_ROOT / "dagster.yaml").read_text())
        for section, values in (overrides or {}).items():
            config[section] = {**config.get(section, {}), **values}
        (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    full_env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
    bin_dir = Path(sys.executable).parent
    commands = {"webserver": [str(bin_dir / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port)],
                "daemon": [str(bin_dir / "dagster-daemon"), "run"]}
    if daemon:  # both servers would otherwise create a fresh instance's storage at once (two alembic heads)
        subprocess.run([sys.executable, "-c", "import dagster; dagster.DagsterInstance.get().dispose()"],
                       cwd=home, env=full_env, check=True, timeout=300)
    procs = []
    for name in ["webserver", "daemon"] if daemon else ["webserver"]:
        with _log(home, name) as log:  # the child keeps its own copy of the file
            procs.append(subprocess.Popen([*commands[name], "-m", "hip_assets.definitions"], cwd=home,
                                          env=full_env, stdout=log, stderr=subprocess.STDOUT))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5):
                    break
            except OSError as err:
                if time.monotonic() > deadline or procs[0].poll() is not None:
                    raise RuntimeError("the Dagster webserver did not come up") from err
                time.sleep(1)
        yield url
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `data` of a query to the webserver's GraphQL endpoint (what the UI itself asks)."""
    payload = {"query": query, "variables": variables or {}}
    request = urllib.request.Request(f"{url}/graphql", data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    if body.get("errors"):
        raise RuntimeError(f"GraphQL errors: {body['errors']}")
    return body["data"]


def _log(home: Path, name: str) -> Any:
    """Where a server's output goes: a file in a test's own instance (read back when its location fails)."""
    if home.resolve() == REPO_ROOT:
        return open(os.devnull, "wb")  # noqa: SIM115  (closed by the caller's `with`)
    return open(home / f"{name}.log", "wb")  # noqa: SIM115


WORKSPACE = """{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus locationOrLoadError {
  __typename ... on PythonError { message } ... on RepositoryLocation { repositories { name } } } } } } }"""
RELOAD = "mutation($name: String!) { reloadRepositoryLocation(repositoryLocationName: $name) { __typename } }"


def loaded_repository(url: str, home: Path, timeout_s: float = 420, reloads: int = 2) -> dict[str, str]:
    """The served repository's selector once its code location has loaded. The webserver answers before that
    (minutes on busy cores); a location that failed to load is reloaded, as the UI's Reload button does, and
    one that keeps failing fails the test with its error and the servers' logs."""
    deadline = time.monotonic() + timeout_s
    while True:
        entry = graphql(url, WORKSPACE)["workspaceOrError"]["locationEntries"][0]
        location = entry["locationOrLoadError"] or {}
        if location.get("__typename") == "RepositoryLocation":
            return {"repositoryLocationName": entry["name"], "repositoryName": location["repositories"][0]["name"]}
        if location.get("__typename") == "PythonError":
            logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(home.glob("*.log")))
            assert reloads > 0, f"the code location did not load: {location['message']}\n{logs}"
            graphql(url, RELOAD, {"name": entry["name"]})
            reloads -= 1
        assert time.monotonic() < deadline, f"the code location is still {entry['loadStatus']} after {timeout_s} s"
        time.sleep(1)


@contextmanager
def instance_at(home: Path, patch: Any) -> Iterator[Any]:
    """The Dagster instance the servers use (its storage paths are relative to DAGSTER_HOME's folder);
    `patch` is pytest's monkeypatch."""
    import dagster as dg

    with patch.context() as local:
        local.chdir(home)
        instance = dg.DagsterInstance.from_config(str(home))
        try:
            yield instance
        finally:
            instance.dispose()
