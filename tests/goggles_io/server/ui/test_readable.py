"""What the page shows can be read as logged, in headless Chromium against a real server:
axis numbers and grid lines at any magnitude, run text that cannot reorder its neighbours,
runs newest first, group colours of their own, copies told apart, stats legends and tables.

Every wait is a condition (``browser.wait``) with a generous timeout: CI has 2 noisy cores.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("selenium")
pytest.importorskip("uvicorn")

import itertools

from browser import browser_marks, chromium, wait
from goggles_io.runs import RunContext
from goggles_io.server.collector import Collector
from ui_runs import append_metric

pytestmark = browser_marks()

SI = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def label_value(text: str) -> float:
    """The number an axis label stands for: "2.5k", "1e35", "-3e-12", "0.5"."""
    return float(text[:-1]) * SI[text[-1]] if text[-1] in SI else float(text)


def make_run(root: Path, slug: str, config: str = "", started: str | None = None) -> RunContext:
    run = RunContext(project="readable", driver="tests", slug=slug, root=root)
    (run.dir / "config.kv").write_text(config)
    run.close()
    if started:
        kv = run.dir / "run.kv"
        kv.write_text("".join(
            f"started={started}\n" if line.startswith("started=") else line + "\n"
            for line in kv.read_text().splitlines()
        ))  # fmt: skip
    return run


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The value-explosion scenario, a recognition demo (stats), a run of tiny and mixed-sign
    values, a run named with an unclosed right-to-left override, six runs in three groups."""
    from experiment_telemetry.demo.experiment import run_demo
    from experiment_telemetry.demo.watch import run_watch_demo

    root = tmp_path_factory.mktemp("readable")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run_watch_demo("value-explosion", root, console=False, progress=False)
        demo = run_demo(root, num_epochs=1, wandb=False, console=False, progress=False).run_dir
    wide = ",".join(f"a_rather_long_column_name_{i}" for i in range(40))
    (demo / "wide_stats.csv").write_text(wide + "\n" + ",".join(["0.125"] * 40) + "\n")
    numbers = make_run(root, "magnitudes")
    for i in range(40):
        append_metric(numbers.dir, "tiny", 1e-12 * (1 + i / 10), i)
        append_metric(numbers.dir, "mixed", (i - 15) * 3e19, i)
    rtl = make_run(root, "evil\u202e", "opt=\u202eadam\n")
    append_metric(rtl.dir, "loss", 1.0, 0)
    for i in range(6):
        group = make_run(root, f"grouped{i}", f"opt={'abc'[i % 3]}\n")
        for step in range(5):
            append_metric(group.dir, "grouped/loss", float(i + step), step)
    return root


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Collector]:
    with Collector(run_dirs=[str(root)]) as collector:
        yield collector


def key_of(root: Path, slug: str) -> str:
    return "dir:" + next(p.name for p in sorted(root.iterdir()) if f"-{slug}-" in p.name)


def open_page(driver: Any, url: str, **query: Any) -> None:
    driver.get(f"{url}/?{urllib.parse.urlencode(query, doseq=True)}")
    wait(driver, lambda d: js(d, "return document.querySelectorAll('#runs tr.run').length") > 0,
         "runs listed")  # fmt: skip


def drawn_panel(driver: Any, metric: str) -> Any:
    """The panel of ``metric`` once uPlot drew it with data."""
    script = ("const p = [...document.querySelectorAll('#charts .panel')]"
              ".find(p => p.dataset.metric === arguments[0]);"
              "return p && p.uplot && p.uplot.data[0].length ? p : null;")  # fmt: skip
    return wait(driver, lambda d: js(d, script, metric), f"{metric} drawn")


def y_axis(driver: Any, panel: Any) -> dict[str, Any]:
    """The y axis as uPlot drew it: tick values, their labels, the label strip's width and
    each tick's pixel row, relative to the chart element."""
    return js(driver, """
      const p = arguments[0], u = p.uplot, chart = p.querySelector('.chart').getBoundingClientRect();
      const over = u.over.getBoundingClientRect();
      return { splits: u.axes[1]._splits, values: u.axes[1]._values, size: u.axes[1]._size,
               left: over.left - chart.left, right: over.right - chart.left,
               rows: u.axes[1]._splits.map(v => over.top - chart.top + u.valToPos(v, 'y')) };
    """, panel)  # fmt: skip


def assert_axis_drawn(driver: Any, panel: Any) -> list[str]:
    """The y axis has at least three labelled ticks whose labels read as their values, its
    label strip has text pixels and each tick has a grid line across the plot."""
    from PIL import Image

    axis = y_axis(driver, panel)
    splits, values = axis["splits"], axis["values"]
    assert len(splits) >= 3 and len(values) == len(splits), axis
    assert all(values) and len(set(values)) == len(values), values
    step = min(abs(b - a) for a, b in itertools.pairwise(splits))
    for text, value in zip(values, splits, strict=True):
        assert abs(label_value(text) - value) <= 0.02 * max(step, abs(value) * 1e-9), (text, value)
    chart = panel.find_element("css selector", ".chart")
    image = Image.open(io.BytesIO(chart.screenshot_as_png)).convert("L")
    gray = np.asarray(image).astype(int)
    scale = gray.shape[1] / chart.size["width"]  # device pixels per CSS pixel
    strip = gray[:, : int(axis["left"] * scale)]
    assert int(np.sum(strip < 110)) > 40 * len(values), "no label text drawn left of the plot"
    x0, x1 = int(axis["left"] * scale) + 2, int(axis["right"] * scale) - 2
    for row in axis["rows"]:
        y = round(row * scale)
        lines = [np.mean(gray[r, x0:x1] < 250) for r in range(max(y - 1, 0), y + 2)]
        assert max(lines) > 0.6, f"no grid line at row {y}"
    return values


class TestAxesAtAnyMagnitude:
    @pytest.mark.parametrize(
        "mode", [{}, {"log": "1"}, {"outliers": "1"}], ids=["linear", "log", "outliers"]
    )
    def test_value_explosion_panel_has_y_numbers_and_grid(
        self, browser: Any, server: Collector, root: Path, mode: dict[str, str]
    ) -> None:
        """q_mean of the value-explosion scenario (up to 4.6e35) shows y tick labels and grid
        lines in linear, log-y and ignore-outliers mode."""
        key = key_of(root, "watch-value-explosion")
        open_page(browser, server.url, run=key, q="q_mean", **mode)
        panel = drawn_panel(browser, "diagnostic/learner/q_mean")

        values = assert_axis_drawn(browser, panel)

        assert any(label_value(v) >= 1e35 for v in values), values
        if mode:
            browser.save_screenshot(str(root.parent / f"q_mean-{'-'.join(mode)}.png"))

    @pytest.mark.parametrize("log", [False, True], ids=["linear", "log"])
    @pytest.mark.parametrize("metric", ["tiny", "mixed"])
    def test_tiny_and_mixed_sign_values(
        self, browser: Any, server: Collector, root: Path, metric: str, log: bool
    ) -> None:
        """Values around 1e-12, and values from -4.5e20 to 7.2e20, have labelled ticks and grid
        lines on a linear and a log scale (a log scale shows the positive ones)."""
        query = {"run": key_of(root, "magnitudes"), "q": f"/^{metric}$/"}
        open_page(browser, server.url, **query, **({"log": "1"} if log else {}))
        panel = drawn_panel(browser, metric)

        values = assert_axis_drawn(browser, panel)

        if metric == "tiny":
            assert all("e-12" in v or "e-11" in v for v in values), values
        elif not log:
            assert "0" in values and any(label_value(v) < 0 for v in values), values


class TestRunTextIsIsolated:
    def drawn_text(self, driver: Any, selector: str) -> tuple[str, list[float]] | None:
        """The text of the last node ``selector`` finds and each character's left edge as
        drawn (one script: the live table may be redrawn between two calls)."""
        return js(driver, """
          const node = [...document.querySelectorAll(arguments[0])].pop();
          if (!node) return null;
          const text = node.firstChild, out = [];
          for (let i = 0; i < text.length; i++) {
            const r = document.createRange(); r.setStart(text, i); r.setEnd(text, i + 1);
            out.push(r.getBoundingClientRect().left);
          }
          return [text.data, out];
        """, selector)  # fmt: skip

    def test_right_to_left_override_stays_in_the_name(
        self, browser: Any, server: Collector, root: Path
    ) -> None:
        """A run named "evil" + U+202E (never closed): its short id after the name is drawn
        left to right, in the runs table and in the chart legend."""
        key = key_of(root, "evil")
        open_page(browser, server.url, run=key)
        drawn_panel(browser, "loss")

        for selector in (f"#runs tr.run[data-key='{key}'] .rid", "#charts .legend .chip bdi"):
            text, lefts = wait(browser, lambda d, s=selector: self.drawn_text(d, s), selector)
            assert key[-6:] == text
            assert lefts == sorted(lefts) and lefts[0] < lefts[-1], (selector, lefts)

    def test_every_run_supplied_text_is_in_an_isolate(
        self, browser: Any, server: Collector, root: Path
    ) -> None:
        """The name, the config value in an added column, the metric name and the compare
        table's cells of the right-to-left run are each inside a bidi isolate."""
        key = key_of(root, "evil")
        open_page(browser, server.url, run=key, col="config.opt", diff="all")
        drawn_panel(browser, "loss")
        isolated = ("return [...document.querySelectorAll(arguments[0])].filter(n => n.textContent.includes('\\u202e'))"
                    ".map(n => getComputedStyle(n).unicodeBidi)")  # fmt: skip
        wait(
            browser,
            lambda d: len(js(d, isolated, "#runs bdi")) == 2,
            "name and config cell isolated",
        )
        assert ["isolate"] * 2 == js(browser, isolated, "#runs bdi")
        browser.find_element("css selector", "#tabs button[data-tab='compare']").click()
        wait(browser, lambda d: js(d, isolated, "#compare td bdi") == ["isolate"], "compare cell")


class TestGroupsAndStats:
    def test_each_group_has_its_own_colour(
        self, browser: Any, server: Collector, root: Path
    ) -> None:
        """Six runs grouped by config opt draw three groups in three distinct colours, none of
        them a member run's colour, and each line in its legend's colour."""
        keys = [key_of(root, f"grouped{i}") for i in range(6)]
        open_page(browser, server.url, run=keys, group="config.opt")
        panel = drawn_panel(browser, "grouped/loss")
        wait(
            browser,
            lambda d: (
                len(js(d, "return arguments[0].querySelectorAll('.legend .chip')", panel)) == 3
            ),
            "3 groups",
        )
        colours = js(browser, """
          const p = arguments[0], u = p.uplot, box = document.createElement('i');
          document.body.append(box);
          const rgb = (c) => { box.style.color = c; return getComputedStyle(box).color; };
          const chips = [...p.querySelectorAll('.legend .chip i')].map(i => getComputedStyle(i).backgroundColor);
          const lines = u.series.filter(s => s.width === 1.6).map(s => rgb(s.stroke(u)));
          const runs = [...document.querySelectorAll('#runs .swatch')].map(i => getComputedStyle(i).backgroundColor);
          box.remove();
          return { chips, lines, runs };
        """, panel)  # fmt: skip

        assert 3 == len(set(colours["chips"])), colours
        assert colours["chips"] == colours["lines"]
        assert not set(colours["chips"]) & set(colours["runs"])

    def test_stats_legend_keys_and_wide_tables_scroll(
        self, browser: Any, server: Collector, root: Path
    ) -> None:
        """The stats chart's legend has a key per line in that line's colour and dash; a 40
        column table scrolls sideways inside its panel and its last column can be reached."""
        key = key_of(root, "demo")
        open_page(browser, server.url, run=key, tab="stats")
        wait(
            browser,
            lambda d: js(d, "return document.querySelector('#stats .legend .line-key')"),
            "legend",
        )
        keys = js(browser, """
          const u = document.querySelector('#stats .stats-chart').__uplot, box = document.createElement('i');
          document.body.append(box);
          const rgb = (c) => { box.style.color = c; return getComputedStyle(box).color; };
          const lines = u.series.slice(1).map((s, i) => [rgb(s.stroke(u, i + 1)), (s.dash || []).length ? s.dash[0] : 0]);
          const legend = [...document.querySelectorAll('#stats .legend .line-key')]
            .map(k => [getComputedStyle(k).borderTopColor, getComputedStyle(k).borderTopStyle]);
          box.remove();
          return { lines, legend };
        """)  # fmt: skip
        styles = {0: "solid", 4: "dashed", 1: "dotted"}
        assert len(keys["lines"]) >= 2
        assert [[c, styles[d]] for c, d in keys["lines"]] == keys["legend"]

        box = js(browser, "return [...document.querySelectorAll('#stats .table-scroll')]"
                          ".find(b => b.textContent.includes('a_rather_long_column_name_39'))")  # fmt: skip
        fits = js(browser, """
          const box = arguments[0], panel = box.closest('.panel').getBoundingClientRect();
          const r = box.getBoundingClientRect();
          const wider = box.scrollWidth > box.clientWidth;
          box.scrollLeft = box.scrollWidth;
          const last = [...box.querySelectorAll('th')].pop().getBoundingClientRect();
          return { wider, inside: r.right <= panel.right + 1, last: last.right <= r.right + 1 && last.left >= r.left };
        """, box)  # fmt: skip
        assert {"wider": True, "inside": True, "last": True} == fits


class TestRunsTable:
    def test_newest_first_and_the_newest_three_ticked(self, browser: Any, tmp_path: Path) -> None:
        """Runs are listed by start time, newest first, whatever their folder names; a page
        opened without runs in its link ticks the newest three."""
        starts = {
            "b": "2026-01-03",
            "a": "2026-01-05",
            "d": "2026-01-01",
            "c": "2026-01-04",
            "e": "2026-01-02",
        }
        runs = {
            s: make_run(tmp_path, s, started=f"{day}T10:00:00+00:00") for s, day in starts.items()
        }
        with Collector(run_dirs=[str(tmp_path)]) as server:
            browser.get(server.url + "/")
            rows = "return [...document.querySelectorAll('#runs tr.run')].map(r => [r.dataset.key, r.querySelector('input').checked])"
            wait(browser, lambda d: len(js(d, rows)) == 5, "5 runs listed")
            listed = js(browser, rows)

        newest = sorted(starts, key=starts.__getitem__, reverse=True)
        assert [f"dir:{runs[s].id}" for s in newest] == [k for k, _ in listed]
        assert [True, True, True, False, False] == [c for _, c in listed]

    def test_added_columns_scroll_into_view(
        self, browser: Any, server: Collector, root: Path
    ) -> None:
        """With config columns added past the sidebar's edge the table scrolls sideways, its
        scrollbar is on screen, and the last column can be brought into view; the sidebar can
        be resized."""
        columns = [
            "config.demo.scenario",
            "config.demo.objects",
            "config.metrics.progress_every",
            "config.opt",
        ]
        open_page(browser, server.url, col=columns)
        state = js(browser, """
          const wrap = document.querySelector('.table-wrap'), r = wrap.getBoundingClientRect();
          const wider = wrap.scrollWidth > wrap.clientWidth;
          wrap.scrollLeft = wrap.scrollWidth;
          const last = [...document.querySelectorAll('#runs th')].pop().getBoundingClientRect();
          return { wider, onScreen: r.bottom <= innerHeight, last: last.right <= r.right + 1 && last.left >= r.left,
                   resize: getComputedStyle(document.querySelector('aside')).resize };
        """)  # fmt: skip

        assert {"wider": True, "onScreen": True, "last": True, "resize": "horizontal"} == state

    def test_copied_run_folder_is_told_apart(self, browser: Any, tmp_path: Path) -> None:
        """A run folder copied to another root is two rows, each naming its own folder as a
        copy; a run with no copy has no such mark."""
        original = make_run(tmp_path / "first", "copied")
        make_run(tmp_path / "first", "single")
        shutil.copytree(original.dir, tmp_path / "second" / original.dir.name)
        with Collector(run_dirs=[str(tmp_path / "first"), str(tmp_path / "second")]) as server:
            browser.get(server.url + "/")
            marks = ("return [...document.querySelectorAll('#runs tr.run')]"
                     ".map(r => [r.querySelector('td.name bdi').textContent, (r.querySelector('.folder') || {}).textContent])")  # fmt: skip
            wait(browser, lambda d: len(js(d, marks)) == 3, "3 rows")
            shown = sorted(js(browser, marks), key=str)

        assert [
            ["copied", f"copy · first/{original.dir.name}"],
            ["copied", f"copy · second/{original.dir.name}"],
            ["single", None],
        ] == shown
