"""Headless-Chromium screenshots of the Dagster UI over what `make demo` stored: the asset graph, the archive,
a KernelBench report, the run list and the demo's run. The webserver runs without the daemon, so no sensor or
schedule launches anything meanwhile.
Usage: python scripts/ui_screenshots.py --out screenshots/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.webserver import CHROMIUM, CHROMIUM_ARGS, REPO_ROOT, dagster_webserver, graphql  # noqa: E402

LAST_DEMO_RUN = '{ runsOrError(filter: {pipelineName: "demo"}, limit: 1) { ... on Runs { results { runId } } } }'
PAGES = {  # file name -> (path, text that shows the page has rendered)
    "asset-graph": ("/assets/kernel_archive?view=lineage&lineageScope=neighbors&lineageDepth=2", "verifier_audit"),
    "archive": ("/assets/kernel_archive", "tasks_with_a_verified_kernel"),
    "report": ("/assets/kernelbench_report", "vs_seed"),
    "runs": ("/runs", "demo"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with dagster_webserver(REPO_ROOT, {}) as url, sync_playwright() as pw:
        runs = graphql(url, LAST_DEMO_RUN)["runsOrError"]["results"]
        pages = {**PAGES, **({"demo-run": (f"/runs/{runs[0]['runId']}", "RUN_SUCCESS")} if runs else {})}
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 1100})
        for name, (path, marker) in pages.items():
            page.goto(url + path, wait_until="domcontentloaded")
            skip = page.get_by_role("button", name="Skip")  # a first-visit newsletter dialog covers the page
            try:
                skip.first.click(timeout=5_000)
            except Exception:  # noqa: BLE001, S110  # shown once per browser profile
                pass
            try:
                page.get_by_text(marker).first.wait_for(timeout=60_000)
            except Exception as err:  # noqa: BLE001  # the picture still shows what was there
                print(f"{name}: {marker!r} did not show ({type(err).__name__})", file=sys.stderr)
            page.wait_for_timeout(1500)  # plots and graph layout settle
            page.screenshot(path=str(args.out / f"{name}.png"), full_page=True)
            print(f"{name}: {args.out / (name + '.png')}")
        browser.close()


if __name__ == "__main__":
    main()
