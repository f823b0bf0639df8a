"""The frictions of issue 43 in headless Chromium: the runs table reads every digit and keeps the
names in view, text blocks in the media view, histogram axes, the system section over wall
time, and a chart drawn before its run is indexed saying so.

Every wait is a condition (``browser.wait``) with a generous timeout: CI has 2 noisy cores.
"""

from __future__ import annotations

import io
import json
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("selenium")
pytest.importorskip("uvicorn")

from browser import browser_marks, chromium, wait
from goggles_io.server.collector import Collector
from ui_glance_runs import make_run, write_points
from ui_runs import robo_goggles_run

pytestmark = browser_marks()


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def open_page(driver: Any, url: str, **query: Any) -> None:
    driver.get(f"{url}/?{urllib.parse.urlencode(query, doseq=True)}")
    wait(driver, lambda d: js(d, "return document.querySelectorAll('#runs tr.run').length") > 0,
         "runs listed")  # fmt: skip


def test_runs_table_every_digit_and_names_in_view(browser: Any, tmp_path: Path) -> None:
    """A run at step 999,999 with six added columns, the table scrolled to its right end: the
    last step reads all six digits uncut, and the run's name is still on screen, on top."""
    run = make_run(tmp_path, "a-rather-long-run-name", {"lr": 0.000123456, "batch": 6400, "opt": "adam",
                   "gamma": 0.99, "notes": "baseline with a long note"})  # fmt: skip
    write_points(run, "loss", [0, 999_999], [1.0, 0.5])
    columns = [
        "config.lr",
        "config.batch",
        "config.opt",
        "config.gamma",
        "config.notes",
        "summary.loss",
    ]
    with Collector(run_dirs=[str(tmp_path)]) as server:
        open_page(browser, server.url, col=columns)
        wait(browser, lambda d: js(d, "return document.querySelector('#runs td.last-step').textContent") == "999999",
             "last step")  # fmt: skip
        js(
            browser,
            "const w = document.querySelector('.table-wrap'); w.scrollLeft = w.scrollWidth;",
        )
        got = js(browser, """
          const w = document.querySelector('.table-wrap'), aside = w.getBoundingClientRect();
          const name = document.querySelector('#runs td.name'), r = name.getBoundingClientRect();
          const top = document.elementFromPoint(r.left + 8, r.top + r.height / 2);
          const cells = [...document.querySelectorAll('#runs td.num')];
          return { scrolled: w.scrollLeft, left: r.left - aside.left, inside: r.right <= aside.right,
                   onTop: name.contains(top),
                   cut: cells.filter(c => c.scrollWidth > c.clientWidth).map(c => c.textContent),
                   batch: cells.map(c => c.textContent) };""")  # fmt: skip

    assert got["scrolled"] > 0, "the table did not need to scroll: no test"
    assert (True, True, []) == (got["inside"] and got["left"] >= 0, got["onTop"], got["cut"])
    assert {"999999", "6400"} <= set(got["batch"])


def test_text_blocks_in_the_media_view(browser: Any, tmp_path: Path) -> None:
    """log.text / add_text blocks: a Text section, one block per name with its step slider,
    the text shown as text (markup in it stays text)."""
    run = robo_goggles_run(tmp_path / "media")
    with open(run / "log.jsonl", "a", encoding="utf-8") as fh:
        for step, text in ((0, "first <b>note</b>"), (5, "second note")):
            fh.write(json.dumps({"kind": "text", "scope": "global", "payload": text, "step": step,
                                 "extra.name": "notes", "timestamp": time.time()}) + "\n")  # fmt: skip
    with Collector(run_dirs=[str(run)]) as server:
        open_page(browser, server.url, tab="media")
        block = wait(
            browser, lambda d: js(d, "return document.querySelector('#media .text-block')"), "text"
        )
        last = block.text
        js(browser, """const s = document.querySelector('#media [data-kind="text"] input[type=range]');
                       s.value = '0'; s.dispatchEvent(new Event('input'));""")  # fmt: skip
        first = js(browser, "return document.querySelector('#media .text-block').textContent")
        bold = js(browser, "return document.querySelectorAll('#media .text-block b').length")
        title = js(
            browser,
            "return document.querySelector('#media [data-section=text] summary').textContent",
        )

    assert ("second note", "first <b>note</b>", 0, "Text (1)") == (last, first, bold, title)


def test_histograms_have_axes(browser: Any, tmp_path: Path) -> None:
    """The histogram at one step and its distribution over steps are drawn with axes: a dark
    line down the left and along the bottom of each canvas, tick marks on it."""
    from PIL import Image

    run = robo_goggles_run(tmp_path / "media")
    with Collector(run_dirs=[str(run)]) as server:
        open_page(browser, server.url, tab="media")
        wait(browser, lambda d: js(d, "return document.querySelectorAll('#media [data-kind=histogram] canvas').length") == 2,
             "both histogram views")  # fmt: skip
        shots = [np.asarray(Image.open(io.BytesIO(c.screenshot_as_png)).convert("RGB")).astype(int)
                 for c in browser.find_elements("css selector", "#media [data-kind=histogram] canvas")]  # fmt: skip
        ratio = js(browser, "return window.devicePixelRatio")

    for image in shots:
        grey = (image.max(axis=2) - image.min(axis=2) < 24) & (
            image.mean(axis=2) < 225
        )  # not blue bars
        height, width = grey.shape
        left = grey[:, : int(60 * ratio)].sum(axis=0).max() / ratio  # the y axis: a grey column
        bottom = (
            grey[int(140 * ratio) : int(170 * ratio), :].sum(axis=1).max() / ratio
        )  # the x axis
        assert left > 0.6 * 154 and bottom > 0.6 * 344, (left, bottom, height, width)


def test_system_section_last_and_over_wall_time(browser: Any, tmp_path: Path) -> None:
    """A run's system/ metrics are their own section, the last; on the step axis they are drawn
    over wall time, and the panel says so."""
    from goggles_io.runs.system import SystemSampler

    run = make_run(tmp_path, "sampled")
    write_points(run, "train/loss", [0, 1, 2], [1.0, 0.5, 0.25])
    sampler = SystemSampler(run)
    for _ in range(4):
        sampler.sample()
    with Collector(run_dirs=[str(tmp_path)]) as server:
        open_page(browser, server.url)
        panel = wait(browser, lambda d: js(d, "return [...document.querySelectorAll('#charts .panel')]"
                                              ".find(p => p.dataset.metric === 'system/cpu_pct' && p.uplot)"), "drawn")  # fmt: skip
        sections = js(
            browser,
            "return [...document.querySelectorAll('#charts .section')].map(s => s.dataset.section)",
        )
        axis = js(browser, "return [arguments[0].axis, arguments[0].uplot.scales.x.time, "
                           "arguments[0].querySelector('.note').textContent]", panel)  # fmt: skip

    assert ["train/", "system/"] == sections
    assert ["time", True, "x: wall time (system metrics have no step)"] == axis


def test_chart_drawn_before_its_run_is_indexed_says_partial(browser: Any, tmp_path: Path) -> None:
    """A run whose log ends in a line still being written (no newline yet) is not wholly
    indexed: its chart says "partial: N% indexed"."""
    run = make_run(tmp_path, "growing")
    write_points(run, "loss", list(range(100)), [0.5] * 100)
    with open(run / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(
            '{"kind": "metric", "payload": {"loss": 0.25}, "step": 100, "pad": "' + "x" * 20_000
        )
    with Collector(run_dirs=[str(tmp_path)]) as server:
        open_page(browser, server.url)
        note = wait(browser, lambda d: js(d, "const p = document.querySelector('#charts .panel');"
                                             "return p && p.uplot && p.querySelector('.note .partial')"), "partial")  # fmt: skip
        text = note.text
        indexed = js(browser, "return state.runs[0].indexed")

    assert text == f"partial: {int(indexed * 100)}% indexed" and 0 < indexed < 1
