"""The real Dagster webserver, opened in headless Chromium: the asset graph shows hipforge's assets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.webserver import CHROMIUM, CHROMIUM_ARGS, dagster_webserver

pytestmark = pytest.mark.browser


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (make setup as root)")
def test_asset_graph_lists_the_project_assets(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    env = {"HIPFORGE_WAREHOUSE": str(tmp_path / "w.duckdb")}
    with dagster_webserver(tmp_path / "home", env) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        # the asset graph around reference_tasks (the global graph starts with its groups collapsed)
        page.goto(f"{url}/assets/reference_tasks?view=lineage&lineageScope=downstream", wait_until="domcontentloaded")
        skip = page.get_by_role("button", name="Skip")  # a first-visit newsletter dialog covers the page
        skip.wait_for(timeout=90_000)
        skip.click()
        for asset in ("synthetic_tasks", "translated_kernels"):
            page.get_by_text(asset, exact=True).first.wait_for(timeout=90_000)
        page.screenshot(path=str(tmp_path / "asset-graph.png"))
        page.goto(f"{url}/assets", wait_until="domcontentloaded")  # the catalog lists every asset
        for asset in ("synthetic_tasks", "translated_kernels", "kernel_archive", "verifier_audit"):
            page.get_by_text(asset, exact=True).first.wait_for(timeout=90_000)
        browser.close()
