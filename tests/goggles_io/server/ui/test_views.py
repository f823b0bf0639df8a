"""The dashboard's views in headless Chromium against a real server: grouped panels and search,
config diff, alert markers, every media view, a robo-goggles run, state kept in the URL.

Every wait is a condition (``browser.wait``) with a generous timeout: CI has 2 noisy cores.
"""

from __future__ import annotations

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
from ui_runs import append_metric, robo_goggles_run, write_alert

pytestmark = browser_marks()

METRICS = (
    "episode/return",
    "episode/length",
    "diagnostic/learner/q_mean",
    "diagnostic/actor/loss",
    "lr",
)


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def make_run(root: Path, slug: str, config: str, steps: int = 50) -> str:
    ctx = RunContext(project="views", driver="tests", slug=slug, root=root)
    (ctx.dir / "config.kv").write_text(config)
    ctx.close()
    for step in range(0, steps * 40, 40):
        for name in METRICS:
            append_metric(ctx.dir, name, float(step % 7) + len(name), step)
    return f"dir:{ctx.dir.name}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("views")
    keys = [
        make_run(root, "a", "lr=0.1\nseed=1\nopt=adam\n"),
        make_run(root, "b", "lr=1e-1\nseed=2\nopt=adam\n"),
    ]
    run_a = root / keys[0][4:]
    write_alert(run_a, "learner", "q_mean", 1280, "value_explosion in learner/q_mean at step 1280")
    robo_goggles_run(root / "robo-run")
    return root, keys


@pytest.fixture(scope="module")
def server(runs: tuple[Path, list[str]]) -> Iterator[Collector]:
    with Collector(run_dirs=[str(runs[0])]) as collector:
        yield collector


def open_page(driver: Any, server: Collector, **query: Any) -> None:
    driver.get(f"{server.url}/?{urllib.parse.urlencode(query, doseq=True)}")
    wait(
        driver,
        lambda d: js(d, "return document.querySelectorAll('#runs tr.run').length") == 3,
        "3 runs listed",
    )


def drawn_panels(driver: Any) -> list[str]:
    return js(driver, "return [...document.querySelectorAll('#charts .panel')].filter(p => p.uplot)"
                      ".map(p => p.dataset.metric)")  # fmt: skip


class TestPanels:
    def test_panels_are_grouped_by_prefix(self, browser: Any, server: Collector, runs: Any) -> None:
        """Metrics sit in one section per name prefix, unprefixed ones last."""
        open_page(browser, server, run=runs[1])
        wait(browser, lambda d: len(drawn_panels(d)) >= 2, "panels drawn")
        sections = js(browser, "return [...document.querySelectorAll('#charts .section')].map(s => "
                               "[s.dataset.section, [...s.querySelectorAll('.panel')].map(p => p.dataset.metric)])")  # fmt: skip

        assert [["diagnostic/", ["diagnostic/actor/loss", "diagnostic/learner/q_mean"]],
                ["episode/", ["episode/length", "episode/return"]], ["(no prefix)", ["lr"]]] == sections  # fmt: skip

    def test_search_keeps_matching_panels_and_regex(
        self, browser: Any, server: Collector, runs: Any
    ) -> None:
        """Typing in the metric search hides the other panels; /regex/ works too."""
        open_page(browser, server, run=runs[1])
        box = browser.find_element("id", "search")
        box.send_keys("q_mean")
        wait(
            browser,
            lambda d: js(d, "return document.querySelectorAll('#charts .panel').length") == 1,
            "one panel",
        )
        only = js(browser, "return document.querySelector('#charts .panel').dataset.metric")
        box.clear()
        box.send_keys("/^episode/")
        wait(
            browser,
            lambda d: js(d, "return document.querySelectorAll('#charts .panel').length") == 2,
            "regex",
        )

        assert "diagnostic/learner/q_mean" == only
        assert "q=%2F%5Eepisode%2F" in browser.current_url

    def test_alert_marker_at_the_watchers_step(
        self, browser: Any, server: Collector, runs: Any
    ) -> None:
        """The watcher's alert is a marker on the matching panel, at the x of its step."""
        open_page(browser, server, run=runs[1][0], q="q_mean")
        wait(
            browser,
            lambda d: js(d, "return document.querySelector('.panel .alert-marker')"),
            "marker",
        )
        left, expected, step, title, elsewhere = js(
            browser,
            """
            const panel = document.querySelector('.panel[data-metric="diagnostic/learner/q_mean"]');
            const mark = panel.querySelector('.alert-marker');
            return [parseFloat(mark.style.left), panel.uplot.valToPos(1280, 'x'), mark.dataset.step, mark.title,
                    document.querySelectorAll('.alert-marker').length];""",
        )

        assert ("1280", 1) == (step, elsewhere) and "value_explosion" in title
        assert abs(expected - left) < 1.0

    def test_alert_marker_links_to_the_alerts_entry(
        self, browser: Any, server: Collector, runs: Any
    ) -> None:
        """Clicking the marker opens the stats tab on the alert's row, highlighted."""
        open_page(browser, server, run=runs[1][0], q="q_mean")
        wait(
            browser,
            lambda d: js(d, "return document.querySelector('.panel .alert-marker')"),
            "marker",
        )
        js(browser, "document.querySelector('.panel .alert-marker').click()")
        wait(
            browser,
            lambda d: js(d, "return document.querySelector('#stats tr.focused')"),
            "the alert's row highlighted",
        )
        tab, row = js(
            browser,
            """return [document.getElementById('stats').hidden,
                       document.querySelector('#stats tr.focused').textContent];""",
        )

        assert not tab
        assert "1280" in row and "value_explosion in learner/q_mean at step 1280" in row


class TestCompare:
    def test_config_diff_highlights_what_differed(
        self, browser: Any, server: Collector, runs: Any
    ) -> None:
        """The compare view shows only the differing key (seed), typed, one column per run."""
        open_page(browser, server, run=runs[1], tab="compare")
        wait(browser, lambda d: js(d, "return document.querySelector('table.diff')"), "diff table")
        rows = js(browser, "return [...document.querySelectorAll('table.diff tr[data-key]')].map(r => "
                           "[r.dataset.key, r.className, [...r.querySelectorAll('td')].slice(1).map(t => t.textContent)])")  # fmt: skip

        assert [["seed", "differs", ["1", "2"]]] == rows


class TestMediaAndRoboGoggles:
    def test_robo_goggles_run_listed_by_folder(self, browser: Any, server: Collector) -> None:
        """A run directory without run.kv is a row named by its folder, status unknown."""
        open_page(browser, server)
        row = js(browser, "const r = document.querySelector('#runs tr.run[data-key=\"dir:robo-run\"]');"
                          "return [r.querySelector('td.name span').textContent, r.querySelector('.status').textContent]")  # fmt: skip

        assert ["robo-run", "unknown"] == row

    def test_every_media_view_shows_its_kind(self, browser: Any, server: Collector) -> None:
        """Images, video, histograms, trajectories, vector fields and artifacts each get a view."""
        open_page(browser, server, run="dir:robo-run", tab="media")
        kinds = ["image", "video", "histogram", "trajectories", "vector_field", "artifact"]
        wait(browser, lambda d: js(d, "return [...new Set([...document.querySelectorAll('.media-view')]"
                                      ".map(v => v.dataset.kind))].sort()") == sorted(kinds), "every view")  # fmt: skip
        drawn = "return [...document.querySelectorAll('.media-view[data-kind=\"' + arguments[0] + '\"] canvas')].length"
        for kind in ("histogram", "trajectories", "vector_field"):
            wait(browser, lambda d, kind=kind: js(d, drawn, kind) >= 1, f"{kind} drawn")
        wait(browser, lambda d: js(d, "const v = document.querySelector('.media-view[data-kind=video] .view');"
                                      "return v && v.querySelector('img, video')"), "video shown")  # fmt: skip

        assert js(
            browser,
            "return document.querySelector('.media-view[data-kind=video] .view').firstChild.src",
        )

    def test_image_enlarges_with_a_step_slider(self, browser: Any, server: Collector) -> None:
        """Clicking a thumbnail opens it full size in a dialog that has a slider over its steps."""
        open_page(browser, server, run="dir:robo-run", tab="media")
        wait(browser, lambda d: js(d, "const i = document.querySelector('.media-view[data-kind=image] img.thumb');"
                                      "return i && i.complete && i.naturalWidth > 0"), "thumbnail loaded")  # fmt: skip
        browser.find_element("css selector", ".media-view[data-kind=image] img.thumb").click()
        wait(
            browser, lambda d: js(d, "return document.getElementById('viewer').open"), "dialog open"
        )
        # The full image loads after the dialog opens: wait for it (reading at once raced it).
        wait(browser, lambda d: js(d, "const i = document.querySelector('#viewer img.full');"
                                      "return i && i.complete && i.naturalWidth > 0"), "full image")  # fmt: skip
        steps = js(browser, "return document.querySelector('#viewer input[type=range]').max")

        assert "2" == steps

    def test_artifact_preview_shows_its_text(self, browser: Any, server: Collector) -> None:
        """An artifact's preview button shows the file's text."""
        open_page(browser, server, run="dir:robo-run", tab="media")
        wait(
            browser,
            lambda d: js(
                d, "return document.querySelector('.media-view[data-kind=artifact] button')"
            ),
            "artifact",
        )
        browser.find_element("css selector", ".media-view[data-kind=artifact] button").click()
        wait(browser, lambda d: js(d, "return document.querySelector('.media-view[data-kind=artifact] pre').textContent"),
             "preview")  # fmt: skip

        assert "notes from the run" == js(
            browser,
            "return document.querySelector('.media-view[data-kind=artifact] pre').textContent",
        )


class TestUrlState:
    def test_a_shared_link_restores_the_view(
        self, browser: Any, server: Collector, runs: Any
    ) -> None:
        """Runs, tab, search, smoothing, log scale and closed sections come back from the URL."""
        open_page(browser, server, run=runs[1], q="episode", smooth="0.6", log="1", closed="episode/",
                  col="config.lr")  # fmt: skip
        wait(
            browser,
            lambda d: js(d, "return document.querySelector('#charts .section')"),
            "sections",
        )
        got = js(
            browser,
            """return [
            [...document.querySelectorAll('#runs tr.run input:checked')].length,
            document.getElementById('search').value, document.getElementById('smooth').value,
            document.getElementById('logy').checked,
            document.querySelector('#charts .section[data-section="episode/"]').open,
            [...document.querySelectorAll('#runs th')].map(t => t.dataset.column).includes('config.lr')];""",
        )

        assert [2, "episode", "0.6", True, False, True] == got

    def test_changes_are_written_back_to_the_url(
        self, browser: Any, server: Collector, runs: Any
    ) -> None:
        """Ticking a run and switching tab update the address, so the link can be shared."""
        open_page(browser, server, run=runs[1][0])
        browser.find_element("css selector", f'#runs tr.run[data-key="{runs[1][1]}"] input').click()
        browser.find_element("css selector", '#tabs button[data-tab="compare"]').click()
        query = urllib.parse.parse_qs(urllib.parse.urlparse(browser.current_url).query)

        assert (sorted(runs[1]), ["compare"]) == (sorted(query["run"]), query["tab"])
