"""In the browser: the non-finite scenario's alert is a chart marker, and the stats tab says how
many lines of a run's files could not be read (issue 30: nothing skipped in silence).

Every wait is a condition (``browser.wait``) with a generous timeout: CI has 2 noisy cores.
"""

from __future__ import annotations

import contextlib
import io
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("selenium")
pytest.importorskip("uvicorn")

from browser import browser_marks, chromium, wait
from goggles_io.runs import RunContext
from goggles_io.server.collector import Collector

pytestmark = browser_marks()

PANEL = "diagnostic/learner/critic_loss"


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The non-finite scenario's run, and a run whose stats.jsonl has two damaged lines."""
    from experiment_telemetry.demo.watch import run_watch_demo

    root = tmp_path_factory.mktemp("strict-views")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run_watch_demo("non-finite", root, console=False, progress=False)
    damaged = RunContext(project="p", driver="tests", slug="damaged", root=root)
    damaged.close()
    (damaged.dir / "stats.jsonl").write_text(
        '{"kind": "episode_stats", "version": 1, "mode": "eval", "avg_rotation_error": NaN}\n'
        '{"kind": "episode_st\n'
        "not json at all\n"
    )
    return root


@pytest.fixture(scope="module")
def server(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    with Collector(run_dirs=[str(root)], index_dir=tmp_path_factory.mktemp("idx")) as collector:
        yield collector


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def key_of(root: Path, part: str) -> str:
    return "dir:" + next(p.name for p in root.iterdir() if part in p.name)


class TestShownNotSkipped:
    def test_nonfinite_alert_is_a_marker_on_its_panel(
        self, browser: Any, server: Collector, root: Path
    ) -> None:
        """The alert whose value is NaN (once a line the dashboard dropped) marks critic_loss."""
        query = urllib.parse.urlencode({"run": key_of(root, "non-finite"), "q": "critic_loss"})
        browser.get(f"{server.url}/?{query}")
        wait(browser, lambda d: js(d, "return document.querySelector('.panel .alert-marker')"),
             "marker", timeout_s=90)  # fmt: skip
        metric, title = js(browser, """
            const mark = document.querySelector('.alert-marker');
            return [mark.closest('.panel').dataset.metric, mark.title];""")  # fmt: skip

        assert PANEL == metric and "non_finite" in title

    def test_stats_tab_counts_unreadable_lines(
        self, browser: Any, server: Collector, root: Path
    ) -> None:
        """The stats tab shows the record that read (bare NaN) and '2 unreadable lines'."""
        query = urllib.parse.urlencode({"run": key_of(root, "damaged"), "tab": "stats"})
        browser.get(f"{server.url}/?{query}")
        text = wait(browser, lambda d: js(d, "const p = document.querySelector('#stats .unreadable');"
                                             "return p && p.textContent"), "unreadable note")  # fmt: skip
        records = js(browser, "return document.querySelector('#stats .records').textContent")

        assert "stats.jsonl: 2 unreadable lines" in text
        assert "1 stat record read from stats.jsonl" == records
