"""A real headless Chromium driven by Selenium, or a clear reason why there is none."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = "chromedriver"
WAIT_SECS = 30


def missing_browser() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not any(shutil.which(name) for name in CHROMIUM):
        return "no chromium on PATH (Debian: apt-get install chromium chromium-driver)"
    if not shutil.which(DRIVER):
        return "no chromedriver on PATH (Debian: apt-get install chromium-driver)"
    return None


def browser(width: int = 1280, height: int = 900) -> Iterator:
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    binary = next(shutil.which(name) for name in CHROMIUM if shutil.which(name))
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--no-first-run", "--disable-extensions", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which(DRIVER)))
    driver.set_page_load_timeout(WAIT_SECS)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver, directory: Path, name: str) -> Path:
    """Save a PNG of the page as it is now; the path is printed for whoever reads the log."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot saved at {path}"
    assert path.stat().st_size > 1000
    print(f"screenshot: {path}")
    return path


def script_errors(driver) -> list[str]:
    """Errors the page's JavaScript raised (a 4xx answer's own console line is not one)."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]]
