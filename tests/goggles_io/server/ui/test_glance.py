"""Many runs at a glance (issue 43), read off the pixels headless Chromium drew: a group whose
members end at different steps keeps its line (no drop) and says n where it changes; std and
min-max bands span what they claim; the same curve logged at 1x and 10x density smooths to the
same line; brushing an axis of the parallel coordinates filters the runs table.

Pixels are matched to values with uPlot's own ``valToPos`` (the scale the chart drew with);
every wait is a condition with a generous timeout (CI has 2 noisy cores).
"""

from __future__ import annotations

import io
import math
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
from ui_glance_runs import curve, make_run, seeds, sweep, write_points

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


def indexed(driver: Any, count: int) -> bool:
    return bool(js(driver, "return state.runs.length === arguments[0] && "
                           "state.runs.every(r => r.indexed >= 1)", count))  # fmt: skip


def drawn(driver: Any, metric: str, series: int, members: int | None = None) -> Any:
    """The panel of ``metric`` once uPlot drew it with ``series`` series (x included) and, for
    a group, from ``members`` members."""
    script = ("const p = [...document.querySelectorAll('#charts .panel')]"
              ".find(p => p.dataset.metric === arguments[0]);"
              "const ok = p && p.uplot && p.uplot.data[0].length && p.uplot.series.length === arguments[1]"
              " && (arguments[2] === null || p.reply.groups[0].members === arguments[2]);"
              "return ok ? p : null;")  # fmt: skip
    return wait(driver, lambda d: js(d, script, metric, series, members), f"{metric} drawn")


def chart_pixels(driver: Any, panel: Any) -> tuple[np.ndarray, dict[str, float]]:
    """The chart as RGB pixels, and where the plot area sits in them. The chart is held in
    ``window.__u`` (what :func:`pos` reads); taken again if it was redrawn meanwhile."""
    from PIL import Image

    for _ in range(20):
        js(driver, "window.__u = arguments[0].uplot", panel)
        chart = panel.find_element("css selector", ".chart")
        image = np.asarray(Image.open(io.BytesIO(chart.screenshot_as_png)).convert("RGB")).astype(
            int
        )
        box = js(driver, """
          const p = arguments[0], c = p.querySelector('.chart').getBoundingClientRect();
          const o = window.__u.over.getBoundingClientRect();
          return { left: o.left - c.left, top: o.top - c.top, width: o.width, height: o.height,
                   ratio: window.devicePixelRatio, same: p.uplot === window.__u };""", panel)  # fmt: skip
        if box["same"]:
            return image, box
    raise AssertionError("the chart kept being redrawn")


def pos(driver: Any, panel: Any, value: float, axis: str) -> float:
    """Where ``value`` is on the chart :func:`chart_pixels` took (CSS pixels, plot area)."""
    return float(js(driver, "return window.__u.valToPos(arguments[0], arguments[1])", value, axis))


def rgb_of(driver: Any, css: str) -> np.ndarray:
    got = js(driver, "const c = document.createElement('canvas').getContext('2d');"
                     "c.fillStyle = arguments[0]; return c.fillStyle;", css)  # fmt: skip
    return np.array([int(got[i : i + 2], 16) for i in (1, 3, 5)])


def line_rows(
    image: np.ndarray, column: int, color: np.ndarray, tolerance: float = 60
) -> list[int]:
    """Rows of ``column`` drawn in (about) ``color``."""
    distance = np.abs(image[:, column, :] - color).sum(axis=1)
    return [int(r) for r in np.flatnonzero(distance <= tolerance)]


class TestGroups:
    @pytest.fixture(scope="class")
    def root(self, tmp_path_factory: pytest.TempPathFactory) -> Path:
        root = tmp_path_factory.mktemp("glance-groups")
        seeds(root / "ends", [6400, 5000, 4000, 3000], lambda s: 1000.0 + 80 * s)
        for level in (1.0, 2.0, 6.0):
            run = make_run(root / "bands", f"level{level:g}", {"algo": "sac"}, group="sac")
            curve(run, "score", 1000, 10, lambda s, level=level: level)
        return root

    def test_members_ending_at_different_steps_no_drop_and_n_shown(
        self, browser: Any, root: Path
    ) -> None:
        """Four seeds ending at 6400, 5000, 4000 and 3000: the group's mean runs to 6400 at the
        mean of the members still there (1120, 1080, 1040, 1000), and n=4, 3, 2, 1 sit where
        the count changes."""
        keys = [f"dir:{p.name}" for p in sorted((root / "ends").iterdir())]
        with Collector(run_dirs=[str(root / "ends")]) as server:
            open_page(browser, server.url, run=keys, group="group", band="none")
            wait(browser, lambda d: indexed(d, 4), "runs indexed")
            js(browser, "refreshPanels(true)")
            panel = drawn(browser, "charts/SPS", 2, 4)
            wait(
                browser,
                lambda d: len(js(d, "return arguments[0].querySelectorAll('.n-mark')", panel)) == 4,
                "n marks",
            )
            image, box = chart_pixels(browser, panel)
            color = rgb_of(browser, js(browser, "return window.__u.series[1].stroke()"))
            marks = js(browser, """return [...arguments[0].querySelectorAll('.n-mark')].map(m =>
              [m.textContent, +m.dataset.x, parseFloat(m.style.left)])""", panel)  # fmt: skip
            where = {v: pos(browser, panel, v, "y") for v in (1120.0, 1080.0, 1040.0, 1000.0)}
            xs = {s: pos(browser, panel, s, "x") for s in (0, 3000, 4000, 5000, 6400)}

        assert [("n=4", 0.0), ("n=3", 3000.0), ("n=2", 4000.0), ("n=1", 5000.0)] == [
            (t, x) for t, x, _ in marks
        ]
        assert all(abs(left - xs[int(x)]) <= 1.0 for _, x, left in marks)
        expected = [(0, 3000, where[1120.0]), (3000, 4000, where[1080.0]),
                    (4000, 5000, where[1040.0]), (5000, 6400, where[1000.0])]  # fmt: skip
        ratio = box["ratio"]
        missing, off = [], []
        for lo, hi, y in expected:
            for px in np.arange(xs[lo] + 3, xs[hi] - 3, 2.0):
                column = round((box["left"] + px) * ratio)
                rows = [
                    r
                    for r in line_rows(image, column, color)  # the plot, not the n= strip
                    if box["top"] * ratio <= r < (box["top"] + box["height"]) * ratio
                ]
                if not rows:
                    missing.append(px)
                elif abs(np.median(rows) / ratio - (box["top"] + y)) > 2.0:
                    off.append((px, np.median(rows) / ratio - box["top"], y))
        assert ([], []) == (missing, off)

    @pytest.mark.parametrize(("band", "lo", "hi"), [
        ("std", 3.0 - math.sqrt(7.0), 3.0 + math.sqrt(7.0)), ("minmax", 1.0, 6.0)])  # fmt: skip
    def test_std_and_min_max_bands(
        self, browser: Any, root: Path, band: str, lo: float, hi: float
    ) -> None:
        """Three members at 1, 2 and 6: the band's filled rows span mean +- std (sample std,
        sqrt 7) or min to max, within 2 pixels."""
        keys = [f"dir:{p.name}" for p in sorted((root / "bands").iterdir())]
        with Collector(run_dirs=[str(root / "bands")]) as server:
            open_page(browser, server.url, run=keys, group="group", band=band)
            wait(browser, lambda d: indexed(d, 3), "runs indexed")
            js(browser, "refreshPanels(true)")
            panel = drawn(browser, "score", 4, 3)
            image, box = chart_pixels(browser, panel)
            top, bottom = pos(browser, panel, hi, "y"), pos(browser, panel, lo, "y")
            middle = pos(browser, panel, 500.0, "x")

        ratio = box["ratio"]
        column = image[:, round((box["left"] + middle) * ratio), :]
        tinted = np.flatnonzero(column.max(axis=1) - column.min(axis=1) > 12) / ratio - box["top"]
        inside = tinted[(tinted > -1) & (tinted < box["height"] + 1)]
        assert abs(inside.min() - top) <= 2.0 and abs(inside.max() - bottom) <= 2.0, (
            inside.min(),
            top,
            inside.max(),
            bottom,
        )


def line_pixels(image: np.ndarray, color: np.ndarray, tolerance: float = 150) -> np.ndarray:
    """``(x, y)`` of every pixel drawn in (about) ``color``: the line and its anti-aliased edge
    (the raw line faint behind it is far lighter than ``tolerance``)."""
    ys, xs = np.nonzero(np.abs(image - color).sum(axis=2) <= tolerance)
    return np.stack([xs, ys], axis=1)


def farthest(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance (in pixels, Chebyshev: 1 is any of the 8 neighbours) from a pixel
    of ``a`` to the nearest pixel of ``b``."""
    worst = 0
    for x in np.unique(a[:, 0]):
        near = b[np.abs(b[:, 0] - x) <= 4]
        for p in a[a[:, 0] == x]:
            d = np.abs(near - p).max(axis=1).min() if len(near) else 99
            worst = max(worst, int(d))
    return worst


class TestSmoothing:
    def test_same_curve_at_1x_and_10x_density_smooths_to_one_line(
        self, browser: Any, tmp_path: Path
    ) -> None:
        """A curve logged every 50 steps and the same curve every 5 steps, smoothed at 0.97 and
        drawn alone (the same colour, the same axes): every pixel of either smoothed line has a
        pixel of the other within one pixel. The smoothing did smooth (the line spans well under
        the raw curve's height); an EMA over point index is 45 pixels off here."""

        def shape(s: float) -> float:
            return math.sin(s / 300.0) + 0.3 * math.sin(s / 150.0)

        lines, heights = [], []
        for every in (50, 5):
            root = tmp_path / f"every{every}"
            run = make_run(root, f"every{every}")
            curve(run, "curve", 10_000, every, shape)
            with Collector(run_dirs=[str(root)]) as server:  # one run: the first colour
                open_page(browser, server.url, run=[f"dir:{run.name}"], smooth="0.97")
                wait(browser, lambda d: indexed(d, 1), "run indexed")
                js(browser, "refreshPanels(true)")
                panel = drawn(browser, "curve", 3)
                image, box = chart_pixels(browser, panel)
                color = rgb_of(browser, js(browser, "return window.__u.series[2].stroke()"))
                raw = (
                    abs(pos(browser, panel, 1.3, "y") - pos(browser, panel, -1.3, "y"))
                    * box["ratio"]
                )
            found = line_pixels(image, color)
            lines.append(found)
            heights.append((found[:, 1].max() - found[:, 1].min(), raw))

        assert (1, 1) == (farthest(lines[0], lines[1]), farthest(lines[1], lines[0]))
        assert all(height < 0.8 * raw for height, raw in heights), heights


class TestParallelCoordinates:
    def test_brushing_an_axis_filters_the_runs_table(self, browser: Any, tmp_path: Path) -> None:
        """Twelve runs over batch 32..256: dragging along the batch axis over its top keeps the
        three runs of batch 256 in the runs table (and the hyperparameter table); on the canvas
        their lines leave that axis in colour while the others' are grey."""
        from selenium.webdriver.common.action_chains import ActionChains

        sweep(tmp_path, 12)
        with Collector(run_dirs=[str(tmp_path)]) as server:
            open_page(browser, server.url, tab="hparams", hp=["config.lr", "config.batch", "summary.loss"],
                      color="summary.loss")  # fmt: skip
            wait(browser, lambda d: indexed(d, 12), "runs indexed")
            js(browser, "renderHparams()")
            canvas = wait(
                browser,
                lambda d: js(d, "return document.querySelector('#hparams .pc-canvas')"),
                "drawn",
            )
            size = js(
                browser,
                "const r = arguments[0].getBoundingClientRect(); return [r.width, r.height]",
                canvas,
            )
            pc = js(browser, """const pc = document.querySelector('#hparams .pc-panel').pc;
              const s = pc.scales[1]; return { x: pc.layout.x(1), top: pc.layout.y(s.pos(256)),
              bottom: pc.layout.y(s.pos(32)), mid: pc.layout.y(s.pos(200)) };""")  # fmt: skip
            ActionChains(browser).move_to_element_with_offset(  # offsets from the canvas' centre
                canvas, int(pc["x"] - size[0] / 2), int(pc["top"] - 8 - size[1] / 2)
            ).click_and_hold().move_by_offset(0, int(pc["mid"] - pc["top"] + 8)).release().perform()
            wait(
                browser,
                lambda d: js(d, "return document.querySelectorAll('#runs tr.run').length") == 3,
                "runs filtered",
            )
            batches = js(browser, "return state.runs.filter(r => document.querySelector("
                                  "`#runs tr.run[data-key=\"${r.key}\"]`)).map(r => r.config.batch)")  # fmt: skip
            rows = js(browser, "return document.querySelectorAll('#hparams tr.hp-run').length")
            canvas = js(browser, "return document.querySelector('#hparams .pc-canvas')")
            from PIL import Image

            image = np.asarray(
                Image.open(io.BytesIO(canvas.screenshot_as_png)).convert("RGB")
            ).astype(int)
            ratio = js(browser, "return window.devicePixelRatio")

        def saturation(y: float) -> int:
            patch = image[
                int((y - 3) * ratio) : int((y + 3) * ratio),
                int((pc["x"] + 4) * ratio) : int((pc["x"] + 9) * ratio),
            ]
            flat = patch.reshape(-1, 3)
            return int((flat.max(axis=1) - flat.min(axis=1)).max())

        assert ([256, 256, 256], 3) == (batches, rows)
        assert saturation(pc["top"]) > 60 and saturation(pc["bottom"]) < 30, (
            saturation(pc["top"]),
            saturation(pc["bottom"]),
        )


def test_single_point_members_drawn_as_points(browser: Any, tmp_path: Path) -> None:
    """A group of single-point series (each run's final loss at its own last step) is drawn:
    its points are on the canvas, not an empty panel."""
    for i, step in enumerate((3000, 4000, 6400)):
        run = make_run(tmp_path, f"final{i}", {"algo": "ppo"}, group="ppo")
        write_points(run, "hparam/final_loss", [step], [0.5 + 0.1 * i])
    with Collector(run_dirs=[str(tmp_path)]) as server:
        open_page(browser, server.url, group="group", band="none")
        wait(browser, lambda d: indexed(d, 3), "runs indexed")
        js(browser, "refreshPanels(true)")
        panel = drawn(browser, "hparam/final_loss", 2, 3)
        image, box = chart_pixels(browser, panel)
        color = rgb_of(browser, js(browser, "return window.__u.series[1].stroke()"))
        spots = [(pos(browser, panel, s, "x"), pos(browser, panel, v, "y"))
                 for s, v in ((3000, 0.5), (4000, 0.6), (6400, 0.7))]  # fmt: skip

    ratio = box["ratio"]
    for x, y in spots:
        column = round((box["left"] + x) * ratio)
        rows = line_rows(image, column, color)
        assert rows and abs(np.median(rows) / ratio - (box["top"] + y)) <= 3.0, (x, y, rows)
