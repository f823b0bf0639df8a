"""The dashboard in a real browser: Debian's chromium driven by selenium against a real server.

Every wait is a condition (``browser.wait``) with a generous timeout: CI has 2 noisy cores.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("selenium")
pytest.importorskip("uvicorn")

from browser import browser_marks, chromium, wait
from goggles_io.runs import RunContext
from goggles_io.server.collector import Collector
from ui_runs import append_metric

pytestmark = browser_marks()


def status_of(driver: Any, run_id: str) -> str:
    return driver.execute_script(
        "const row = [...document.querySelectorAll('#runs tr.run')]"
        ".find(r => r.dataset.key === arguments[0]);"
        "return row ? row.querySelector('.status').textContent : '';",
        f"dir:{run_id}",
    )


def panel_names(driver: Any) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#charts .panel h3')].map(h => h.textContent)"
    )


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from experiment_telemetry.demo.experiment import run_demo

    root = tmp_path_factory.mktemp("demo")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run_demo(root, seed=0, num_epochs=1, wandb=False, console=False, progress=False)
    return root


@pytest.fixture
def live_run(tmp_path: Path) -> Iterator[RunContext]:
    run = RunContext(project="ui-test", driver="tests", slug="live", root=tmp_path / "live")
    append_metric(run.dir, "loss", 1.0, 0)
    yield run
    run.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


class TestDashboardInChromium:
    def test_demo_run_listed_and_chart_drawn(self, browser: Any, demo_root: Path) -> None:
        """The runs table lists the demo run as done, and a chart has drawn coloured pixels."""
        from PIL import Image

        run_id = next(p.name for p in demo_root.iterdir() if (p / "run.kv").is_file())
        with Collector(run_dirs=[str(demo_root)]) as server:
            browser.get(server.url + "/")
            wait(browser, lambda d: status_of(d, run_id) == "done", "demo run listed as done")
            wait(browser, lambda d: d.execute_script("return window.__firstChartPaint"), "paint")
            chart = browser.find_element("css selector", "#charts .panel .chart")
            image = Image.open(io.BytesIO(chart.screenshot_as_png)).convert("RGB")

        pixels = np.asarray(image).reshape(-1, 3).astype(int)
        blue = int(np.sum(pixels[:, 2] - pixels[:, 0] > 80))  # the first run's colour is blue
        assert blue > 50, "no trace pixels drawn in the first chart"

    def test_point_logged_while_open_appears(self, browser: Any, live_run: RunContext) -> None:
        """A metric written after the page loaded shows up without a reload."""
        with Collector(run_dirs=[str(live_run.dir)]) as server:
            browser.get(server.url + "/")
            wait(browser, lambda d: "loss" in panel_names(d), "first metric drawn")
            append_metric(live_run.dir, "late/accuracy", 0.5, 3)

            wait(browser, lambda d: "late/accuracy" in panel_names(d), "live metric drawn")

    def test_sigkilled_run_shows_crashed(self, browser: Any, tmp_path: Path) -> None:
        """A run whose process was SIGKILLed (status=running, dead pid) is shown as crashed."""
        script = (
            "import sys, time\n"
            "from goggles_io.runs import RunContext\n"
            "run = RunContext(project='p', driver='d', slug='doomed', root=sys.argv[1])\n"
            "print(run.id, flush=True)\n"
            "time.sleep(600)\n"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "runs")],
                                stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
        try:
            run_id = proc.stdout.readline().strip()  # type: ignore[union-attr]
            with Collector(run_dirs=[str(tmp_path / "runs")]) as server:
                browser.get(server.url + "/")
                wait(browser, lambda d: status_of(d, run_id) == "running", "listed as running")
                proc.send_signal(signal.SIGKILL)
                proc.wait(30)

                wait(browser, lambda d: status_of(d, run_id) == "crashed", "shown as crashed")
        finally:
            proc.kill()
            proc.wait(30)

    def test_script_metric_name_is_text(self, browser: Any, live_run: RunContext) -> None:
        """A metric named like markup is shown as text and runs no script."""
        name = "<script>window.__pwned=1</script><img src=x onerror='window.__pwned=2'>"
        append_metric(live_run.dir, name, 2.0, 1)
        with Collector(run_dirs=[str(live_run.dir)]) as server:
            browser.get(server.url + "/")
            wait(browser, lambda d: name in panel_names(d), "markup name shown as text")
            pwned = browser.execute_script("return window.__pwned")
            images = browser.execute_script("return document.querySelectorAll('h3 img').length")

        assert (None, 0) == (pwned, images)
