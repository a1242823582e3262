"""An explorer page (:mod:`.explorer`) in headless Chromium: the screenshot of
``fairseq-tpr-roles html --screenshot``, the browser tests and ``benchmarks/explorer_scale.py``.

It drives the system's Chromium through its ChromeDriver with Selenium (Debian: ``apt-get install
chromium chromium-driver``; ``pip install selenium``, in the ``dev`` extra); nothing is downloaded.
Chromium starts with the flags a machine without network needs (no background networking, no
component updates, no sync) and a fresh profile.
"""
import os
import shutil
import tempfile
from typing import List, Optional

from ..errors import DependencyError

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")


def find_browser():
    """(chromium, chromedriver) paths, or a DependencyError that says how to install what is missing."""
    browser = next((p for p in map(shutil.which, BROWSERS) if p), None)
    driver = next((p for p in map(shutil.which, DRIVERS) if p), None)
    try:
        import selenium  # noqa: F401
    except ImportError:
        raise DependencyError("the headless browser needs Selenium: pip install selenium (in the dev extra)")
    if not browser or not driver:
        raise DependencyError(f"no {'Chromium' if not browser else 'ChromeDriver'} on PATH: install Debian's "
                          "chromium and chromium-driver (apt-get install chromium chromium-driver; "
                          "scripts/system_deps.sh does it when run as root)")
    return browser, driver


class Page:
    """One headless Chromium window on one explorer file (``with Page(path) as page:``)."""

    def __init__(self, path: str, width: int = 1400, height: int = 1000, timeout: float = 60.0):
        self.path, self.width, self.height, self.timeout = os.path.abspath(path), width, height, timeout
        self.driver = None

    def __enter__(self):
        import logging

        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        for name in ("selenium", "urllib3"):  # their request logs, under a root logger at DEBUG
            logging.getLogger(name).setLevel(logging.WARNING)

        browser, driver = find_browser()
        self._profile = tempfile.mkdtemp(prefix="explorer-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = browser
        for flag in FLAGS + (f"--window-size={self.width},{self.height}", f"--user-data-dir={self._profile}"):
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(driver), options=opts)
        self.driver.set_script_timeout(self.timeout)
        return self

    def __exit__(self, *exc):
        if self.driver is not None:
            self.driver.quit()
        shutil.rmtree(self._profile, ignore_errors=True)

    def open(self) -> float:
        """Load the page; milliseconds from navigation to the page's ready mark (drawn, interactive)."""
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.get("file://" + self.path)
        WebDriverWait(self.driver, self.timeout).until(
            lambda d: d.execute_script("return document.body.dataset.ready === 'true' "
                                       "|| !document.getElementById('error').hidden"))
        error = self.js("return document.getElementById('error').hidden ? null : "
                        "document.getElementById('error').textContent")
        if error:
            raise RuntimeError(f"{self.path}: {error}; console: {self.console()}")
        return float(self.js("return window.explorer.ready"))

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def select(self, control: str, value: str) -> float:
        """Set selector ``control`` to ``value`` as a user does; milliseconds until the next frame
        is drawn after it (the redraw, layout and paint)."""
        return float(self.driver.execute_async_script(
            "const [id, value, done] = arguments; const el = document.getElementById(id);"
            "const t0 = performance.now(); el.value = value; el.dispatchEvent(new Event('change'));"
            "requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));",
            control, str(value)))

    def options(self, control: str) -> List[str]:
        return self.js("return [...document.getElementById(arguments[0]).options].map(o => o.value)", control)

    def console(self, level: str = "SEVERE") -> List[str]:
        """Messages of the browser console at ``level`` (errors, failed loads) since the last call."""
        return [m["message"] for m in self.driver.get_log("browser") if m["level"] == level]

    def screenshot(self, png: str, height: Optional[int] = None) -> str:
        if height:
            self.driver.set_window_size(self.width, height)
        os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
        self.driver.save_screenshot(png)
        return png
