"""One results directory, one built site, one loopback server and one headless Chromium
for every browser test of the site (Playwright driving the Debian chromium package; no
browser is ever downloaded)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from collections.abc import Iterator

import pytest

from masgrid._private.site.build import build_site
from masgrid._private.site.serve import make_server
from tests.support.ui_results import build_results

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def ui_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_results(tmp_path_factory.mktemp("ui-results"))


@pytest.fixture(scope="session")
def site(ui_results: Path) -> Path:
    return build_site(ui_results).parent


@pytest.fixture(scope="session")
def server(site: Path) -> Iterator[str]:
    httpd = make_server(site, 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(site: Path) -> Iterator[object]:
    """One browser per module, closed with it: while Playwright's sync API is open its event
    loop runs in this thread, and any later asyncio.run (every scripted run) is refused. The
    site is built first for the same reason."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).is_file() or shutil.which("chromium") is None:
        pytest.skip("the Debian chromium package is not installed (make install-browser, as root: "
                    "apt-get install -y chromium)")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Recorded:
    """A page whose every request, console error and page error is kept."""

    def __init__(self, browser: object) -> None:
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})  # type: ignore[attr-defined]
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)


@pytest.fixture
def recorded(browser: object) -> Iterator[Recorded]:
    rec = Recorded(browser)
    yield rec
    rec.page.close()
