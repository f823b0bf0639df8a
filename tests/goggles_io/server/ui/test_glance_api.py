"""Many runs at a glance (issue 43), below the browser: the group statistics against a naive
reference, text blocks and TensorBoard's add_hparams/add_text in the runs' data, ``telemetry
runs``/``show`` on a TensorBoard log directory, download names, the charted run indexed first.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("uvicorn")

from goggles_io.server.ui._groups import group_band
from goggles_io.server.ui._headers import attachment
from ui_glance_runs import make_run, write_points

ROOT = Path(__file__).resolve().parents[4]


def reference(members: list[tuple[list[float], list[float]]], x: float) -> list[float]:
    """The members present at ``x`` (within their own first and last x), linearly interpolated."""
    out = []
    for xs, ys in members:
        order = np.argsort(xs, kind="stable")
        xs_, ys_ = np.asarray(xs)[order], np.asarray(ys)[order]
        if xs_[0] <= x <= xs_[-1]:
            out.append(float(np.interp(x, xs_, ys_)))
    return out


member = st.integers(1, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1000), min_size=n, max_size=n, unique=True).map(sorted),
        st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=n, max_size=n),
    )
)


class TestGroupBand:
    @given(members=st.lists(member, min_size=1, max_size=5), n=st.integers(2, 64))
    @example(members=[([0], [0.0]), ([2, 3, 4, 5, 6, 7, 8], [0.0] * 7)], n=6)  # a gap at x=1.6
    @settings(max_examples=150, deadline=None)
    def test_each_point_is_over_the_members_present_there(
        self, members: list[tuple[list[int], list[float]]], n: int
    ) -> None:
        """At every x of the answer: count, mean, median, sample std, stderr, min and max are
        those of the members present there (interpolated), or null (a gap) where none is; and
        each member's first and last x are on the grid (n changes exactly there)."""
        parts = [{"x": [float(v) for v in xs], "y": ys} for xs, ys in members]
        got = group_band(parts, n)
        floats = [([float(v) for v in xs], ys) for xs, ys in members]

        for i, x in enumerate(got["x"]):
            here = reference(floats, x)
            assert got["count"][i] == len(here)
            if not here:  # between members (one ended before the next began): a gap
                stats = ("mean", "median", "lo", "hi", "std", "stderr")
                assert [None] * 6 == [got[key][i] for key in stats]
                continue
            assert got["mean"][i] == pytest.approx(np.mean(here), abs=1e-6)
            assert got["median"][i] == pytest.approx(np.median(here), abs=1e-6)
            assert got["lo"][i] == pytest.approx(min(here), abs=1e-6)
            assert got["hi"][i] == pytest.approx(max(here), abs=1e-6)
            std = float(np.std(here, ddof=1)) if len(here) > 1 else 0.0
            assert got["std"][i] == pytest.approx(std, abs=1e-6)
            assert got["stderr"][i] == pytest.approx(std / math.sqrt(len(here)), abs=1e-6)
        ends = {float(v) for xs, _ in members for v in (xs[0], xs[-1])}
        assert ends <= set(got["x"])

    def test_single_points_and_a_member_that_ended(self) -> None:
        """Three single-point members at their own steps are three points of the group; a
        member that ended drops out (the mean is the rest's, not pulled to zero)."""
        points = group_band([{"x": [3000.0], "y": [0.5]}, {"x": [4000.0], "y": [0.6]},
                             {"x": [6400.0], "y": [0.7]}], 100)  # fmt: skip
        ended = group_band([{"x": [0.0, 100.0], "y": [10.0, 10.0]},
                            {"x": [0.0, 50.0], "y": [20.0, 20.0]}], 8)  # fmt: skip

        assert ([3000.0, 4000.0, 6400.0], [0.5, 0.6, 0.7], [1, 1, 1]) == (
            points["x"], points["mean"], points["count"])  # fmt: skip
        after = [m for x, m in zip(ended["x"], ended["mean"], strict=True) if x > 50]
        assert after and all(m == 10.0 for m in after)

    def test_scales_more_than_ten_times_apart_get_a_note(self) -> None:
        """Members whose values are 100x apart: a note says the mean follows the largest;
        members within 10x of each other: no note."""
        apart = group_band(
            [{"x": [0.0, 1.0], "y": [1.0, 1.0]}, {"x": [0.0, 1.0], "y": [100.0, 100.0]}], 8
        )
        close = group_band(
            [{"x": [0.0, 1.0], "y": [1.0, 1.0]}, {"x": [0.0, 1.0], "y": [9.0, 9.0]}], 8
        )

        assert "differ 100x" in apart["note"] and close["note"] is None


def test_download_names_keep_their_extension() -> None:
    """A name over 150 characters is cut before its extension, never through it."""
    header = attachment("dir:run_" + "x" * 300 + ".csv")
    fallback = header.split('filename="')[1].split('"')[0]

    assert (150, True) == (len(fallback), fallback.endswith(".csv"))


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


@pytest.fixture(scope="module")
def tb_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tensorboardX log directory as a script writes it: scalars to step 6400, add_text,
    then add_hparams last (its own time.time() sub-folder, metrics at step 0)."""
    tensorboardx = pytest.importorskip("tensorboardX")
    pytest.importorskip("tensorboard")
    logdir = tmp_path_factory.mktemp("tb") / "runs" / "ppo_seed1"
    with tensorboardx.SummaryWriter(str(logdir)) as writer:
        for step in range(0, 6401, 100):
            writer.add_scalar("charts/SPS", 1000.0 + step / 100, step)
        writer.add_text("notes", "reward shaping **on**", 6400)
        writer.add_hparams({"lr": 3e-4, "seed": 1}, {"hparam/final_loss": 0.25})
    return logdir


class TestTensorBoardLogdir:
    def test_add_hparams_is_the_runs_own_and_add_text_is_a_text_item(self, tb_logdir: Path) -> None:
        """The timestamp folder of add_hparams adds nothing to metric names: its metric is
        ``hparam/final_loss``, as the switched runs name it, and its hyperparameters are the
        run's config; add_text's block is a text item of the media view."""
        from goggles_io.server.collector import Collector
        from support import wait_until

        with Collector(run_dirs=[str(tb_logdir.parent)]) as server:
            key = f"dir:{tb_logdir.name}"

            def run() -> dict[str, Any]:
                return next(
                    (r for r in get(f"{server.url}/api/runs")["runs"] if r["key"] == key), {}
                )

            wait_until(lambda: run().get("indexed") == 1.0 and "hparam/final_loss" in run().get("metrics", {}),
                       timeout_s=60)  # fmt: skip
            found = run()
            media = get(f"{server.url}/api/media?run={urllib.parse.quote(key)}")["media"]

        assert {"charts/SPS", "hparam/final_loss"} == set(found["metrics"])
        assert (3e-4, 1) == (found["config"]["lr"], found["config"]["seed"])
        assert 6400 == found["last_step"]
        texts = [(m["name"], m["step"], m["text"]) for m in media if m["kind"] == "text"]
        assert [("notes", 6400, "reward shaping **on**")] == texts

    def test_telemetry_runs_and_show_read_it_with_its_true_last_step(self, tb_logdir: Path) -> None:
        """``telemetry runs`` lists the log directory (status unknown, last step 6400, not the
        0 add_hparams logged last); ``telemetry show`` prints its hyperparameters and metrics."""
        cli = [sys.executable, "-m", "experiment_telemetry"]
        listed = subprocess.run([*cli, "runs", str(tb_logdir.parent)], capture_output=True, text=True,
                                timeout=120, cwd=ROOT)  # fmt: skip
        shown = subprocess.run([*cli, "show", str(tb_logdir)], capture_output=True, text=True,
                               timeout=120, cwd=ROOT)  # fmt: skip
        row = next(line for line in listed.stdout.splitlines() if line.startswith("ppo_seed1"))

        assert (0, 0) == (listed.returncode, shown.returncode), listed.stderr + shown.stderr
        assert ["ppo_seed1", "unknown", "6400"] == [row.split()[0], row.split()[1], row.split()[3]]
        assert "last_step=6400" in shown.stdout
        assert "lr = 0.0003" in shown.stdout and "hparam/final_loss = 0.25" in shown.stdout


def test_switched_run_last_step_is_the_largest(tmp_path: Path) -> None:
    """A run whose log ends with add_hparams' metric at step 0 (the compat writer) after
    training to 6400: ``telemetry runs`` says 6400."""
    run = make_run(tmp_path, "switched")
    write_points(run, "charts/SPS", [0, 3200, 6400], [1.0, 2.0, 3.0])
    write_points(run, "hparam/final_loss", [0], [0.25])
    listed = subprocess.run([sys.executable, "-m", "experiment_telemetry", "runs", str(tmp_path)],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip

    assert "6400" in next(line for line in listed.stdout.splitlines() if "switched" in line)


def test_the_charted_run_is_indexed_first(tmp_path: Path) -> None:
    """Two runs of ~6 MiB of lines each: once the page charts the second, the index reads only
    it until it is done; the first waits (and then is read too)."""
    from goggles_io.server.store import RunStore
    from goggles_io.server.ui._sources import Catalog

    first, second = make_run(tmp_path / "r", "first"), make_run(tmp_path / "r", "second")
    for run in (first, second):
        write_points(run, "loss", list(range(60_000)), [0.5] * 60_000)
    catalog = Catalog(RunStore(":memory:"), [str(tmp_path / "r")], str(tmp_path / "index"))
    try:
        catalog.turn()  # a little of each
        rows = {r["name"]: r for r in catalog.summaries()}
        assert all(0 < r["indexed"] < 1 for r in rows.values())
        catalog.want([rows["second"]["key"]])
        progress = []
        while rows["second"]["indexed"] < 1:
            catalog.turn()
            rows = {r["name"]: r for r in catalog.summaries()}
            progress.append((rows["first"]["indexed"], rows["second"]["indexed"]))
        while catalog.turn():
            pass
        done = {r["name"]: r["indexed"] for r in catalog.summaries()}
    finally:
        catalog.close()

    assert len({f for f, _ in progress}) == 1, progress  # the first did not move meanwhile
    assert {"first": 1.0, "second": 1.0} == done
