"""``telemetry plot``: the figure names its run, and a mode's line stops where its block does.

Read back from the SVG matplotlib writes (each line carries its ``gid``; text is kept as a
comment beside its glyphs), so the real plotter draws what is checked.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from pathlib import Path

import pytest

from experiment_telemetry.cli import main
from experiment_telemetry.cli.plot import broken_at_gaps

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from experiment_telemetry.demo.experiment import run_demo

    root = tmp_path_factory.mktemp("plot")
    with contextlib.redirect_stdout(io.StringIO()):
        return run_demo(root, num_epochs=2, wandb=False, console=False, progress=False).run_dir


def plotted_svg(run_dir: Path, out: Path) -> str:
    assert 0 == main(["plot", str(run_dir), "-o", str(out)])
    return out.read_text(encoding="utf-8")


def line_path(svg: str, gid: str) -> str:
    """The ``d`` of the path inside the group matplotlib names ``gid``."""
    start = svg.index(f'<g id="{gid}">')
    return re.search(r' d="([^"]*)"', svg[start:]).group(1)  # type: ignore[union-attr]


class TestPlotCommand:
    def test_title_names_the_run_and_its_id(self, demo_run: Path, tmp_path: Path) -> None:
        """The figure's title is the run's name and its full id, as in run.kv."""
        svg = plotted_svg(demo_run, tmp_path / "run.svg")

        assert f"<!-- demo · {demo_run.name} -->" in svg

    def test_train_and_eval_lines_break_between_blocks(
        self, demo_run: Path, tmp_path: Path
    ) -> None:
        """Two epochs give two train and two eval blocks: each line is two pieces (two moveto),
        not one line bridging the other mode's episodes."""
        svg = plotted_svg(demo_run, tmp_path / "run.svg")

        for gid in ("train-percent_correct", "eval-percent_correct", "train-percent_confused"):
            assert 2 == line_path(svg, gid).count("M"), gid

    def test_gaps_become_nan_points(self) -> None:
        """A jump of more than one episode puts a NaN between the blocks; a None value is NaN."""
        xs, ys = broken_at_gaps([0, 1, 2, 6, 7], [10.0, 20.0, None, 30.0, 40.0])

        assert [0.0, 1.0, 2.0, 6.0, 7.0] == [x for x in xs if not math.isnan(x)]
        assert 6 == len(xs) and math.isnan(xs[3]) and math.isnan(ys[3])
        assert math.isnan(ys[2]) and [10.0, 20.0] == ys[:2] and [30.0, 40.0] == ys[4:]
