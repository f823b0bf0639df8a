"""Headless Chromium for the dashboard's browser tests: Debian's chromium + chromium-driver via
selenium, with the flags a root CI container needs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
)


def chromium_paths() -> tuple[str, str] | None:
    """``(chromium, chromedriver)`` when both are installed, else ``None``."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@contextmanager
def chromium() -> Iterator[Any]:
    """A selenium WebDriver on a fresh profile, quit (and the profile removed) afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = chromium_paths()
    assert paths is not None, "install chromium and chromium-driver (apt) for browser tests"
    profile = tempfile.mkdtemp(prefix="telemetry-ui-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=paths[1]), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.set_script_timeout(60)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


WAIT_S = 60.0  # CI has 2 noisy cores: every browser wait is a condition with this timeout


def wait(driver: Any, condition: Any, what: str, timeout_s: float = WAIT_S) -> Any:
    """Wait until ``condition(driver)`` is truthy (polled every 0.1 s); ``what`` names it on timeout."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout_s, poll_frequency=0.1).until(condition, message=what)


def browser_marks() -> list[Any]:
    """The marks of a browser test module: slow, and skipped without chromium + driver."""
    import pytest

    reason = "chromium + chromium-driver not installed"
    return [pytest.mark.slow, pytest.mark.skipif(chromium_paths() is None, reason=reason)]
