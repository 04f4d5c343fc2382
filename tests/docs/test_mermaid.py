"""The architecture diagram renders without the network: ``make docs`` ships the pinned
Mermaid script with the site (scripts/mermaid.sh), and the theme uses it rather than its CDN.

The site is built as ``make docs`` builds it, then opened from disk in headless Chromium with
every request off this machine refused: the diagram must be drawn, not shown as its source.

``make test`` runs ``make docs`` first and names the site it has just built in
``TESTS_DOCS_SITE``: that very site is opened then, rather than a second build of the same
sources. Without it (pytest run alone) the test builds the site itself, as ``make docs`` does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs.pages import REPO
from tests.inspector.test_browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, require_browser


def _build_site(site: Path) -> Path:
    """The site as ``make docs`` builds it: mkdocs, then scripts/mermaid.sh."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    mkdocs = Path(sys.executable).parent / "mkdocs"
    subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        check=True,
        timeout=300,
    )
    subprocess.run(["bash", "scripts/mermaid.sh", str(site)], cwd=REPO, check=True, timeout=300)
    return site


def test_the_diagrams_render_offline_from_the_shipped_script(tmp_path: Path) -> None:
    sync_api = require_browser()
    built = os.environ.get("TESTS_DOCS_SITE")
    site = Path(built) if built else _build_site(tmp_path / "site")
    script = site / "javascripts" / "mermaid.min.js"
    assert script.stat().st_size > 1_000_000
    page_file = site / "architecture" / "index.html"
    assert 'src="../javascripts/mermaid.min.js"' in page_file.read_text()
    off_machine: list[str] = []
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = chromium.new_page()

            def route(request_route: object) -> None:
                url = request_route.request.url  # type: ignore[attr-defined]
                if url.startswith("file://"):
                    request_route.continue_()  # type: ignore[attr-defined]
                else:
                    off_machine.append(url)
                    request_route.abort()  # type: ignore[attr-defined]

            page.route("**/*", route)
            page.goto(page_file.as_uri())
            # the theme replaces each diagram's source (pre.mermaid) with a div holding the
            # SVG in a closed shadow root: the source is gone and a drawing takes its place
            rendered = page.locator("div.mermaid").first
            sync_api.expect(rendered).to_be_visible(timeout=WAIT_MS)
            sync_api.expect(page.locator("pre.mermaid")).to_have_count(0)
            box = rendered.bounding_box()
            assert box is not None and box["height"] > 100, box
        finally:
            chromium.close()
    assert not any("mermaid" in url for url in off_machine), off_machine
