"""TensorBoard event files read as runs: every point, hyperparameters as config, bounded reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")

from goggles_io.runs import describe_run, find_runs, open_run, read_config, search_runs
from goggles_io.runs.hparams import markdown_table
from goggles_io.runs.tfevents import read_records

POINTS = 5_000  # more than EventAccumulator's 1,000-a-tag reservoir


def tensorboard_run(folder: Path, points: int = POINTS) -> Path:
    """A run written by ``tensorboard.summary.Writer`` (TensorBoard's own, numpy-only)."""
    from tensorboard.summary import Writer

    writer = Writer(str(folder))
    for step in range(points):
        writer.add_scalar("loss", 1.0 / (step + 1), step=step, wall_time=1_000.0 + step)
    writer.close()
    return folder


def tensorboardx_run(folder: Path, points: int = POINTS) -> Path:
    """A run written by tensorboardX, with a CleanRL hyperparameters table and add_scalars."""
    tensorboardx = pytest.importorskip("tensorboardX")
    writer = tensorboardx.SummaryWriter(str(folder))
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n|lr|0.00025|\n|seed|3|")
    for step in range(points):
        writer.add_scalar("charts/episodic_return", float(step), step, walltime=2_000.0 + step)
    writer.add_scalars("pair", {"a": 1.0, "b": 2.0}, 7)
    writer.close()
    return folder


class TestEveryPoint:
    def test_tensorboard_writer_run_has_every_point_with_its_wall_time(
        self, tmp_path: Path
    ) -> None:
        """5,000 scalars of tensorboard.summary.Writer are 5,000 rows of history, wall time kept."""
        run = open_run(tensorboard_run(tmp_path / "old"))
        table = run.history(pandas=False)
        loss = run.series("loss")

        assert (POINTS, list(range(POINTS))) == (len(table["step"]), table["step"])
        assert (1.0, 1_000.0, 1_000.0 + POINTS - 1) == (
            table["loss"][0],
            loss.time[0],
            loss.time[-1],
        )

    def test_tensorboardx_run_has_every_point_and_its_hyperparameters(self, tmp_path: Path) -> None:
        """tensorboardX's scalars all arrive; add_scalars gives <main tag>/<tag>;
        the hyperparameters table is the run's config; the layout says tensorboard."""
        path = tensorboardx_run(tmp_path / "tbx")
        run = open_run(path)

        assert POINTS == len(run.series("charts/episodic_return"))
        assert {"pair/a", "pair/b"} <= set(run.metrics)
        assert {"lr": 0.00025, "seed": 3} == read_config(path) == run.config
        assert ("tensorboard", "unknown") == (run.info["layout"], run.info["status"])

    def test_search_runs_lists_tensorboard_runs_beside_others(self, tmp_path: Path) -> None:
        """search_runs finds TensorBoard log directories under a root, with config and summary."""
        tensorboard_run(tmp_path / "runs" / "a", points=10)
        tensorboardx_run(tmp_path / "runs" / "b", points=10)
        table = search_runs(tmp_path / "runs", pandas=False)

        assert (["a", "b"], [pytest.approx(0.1), None]) == (
            sorted(table["run_id"]),
            table["summary.loss"],
        )
        assert [None, 0.00025] == table["config.lr"]


class TestDamagedFiles:
    def test_a_record_with_a_bad_crc_is_counted_and_the_rest_read(self, tmp_path: Path) -> None:
        """Flipping a byte inside one record loses that point alone, counted as unreadable."""
        path = tensorboard_run(tmp_path / "old", points=100)
        (events,) = path.glob("events.out.tfevents.*")
        data = bytearray(events.read_bytes())
        data[len(data) // 2] ^= 0xFF
        events.write_bytes(bytes(data))
        run = open_run(path)

        assert (99, {"metrics": 1}) == (len(run.series("loss")), run.unreadable)

    def test_a_torn_last_record_waits_for_its_end(self, tmp_path: Path) -> None:
        """A record cut short (the writer mid-write) is not read and not counted: the offset
        stays before it."""
        path = tensorboard_run(tmp_path / "old", points=10)
        (events,) = path.glob("events.out.tfevents.*")
        whole = events.read_bytes()
        events.write_bytes(whole[:-3])
        with events.open("rb") as fh:
            records, offset, skipped = read_records(fh, 0, 1 << 20)

        assert (10, 0) == (len(records), skipped)  # the file-version record, then 9 of 10 points
        assert offset < len(whole) - 3

    def test_an_over_long_record_is_skipped_without_being_read(self, tmp_path: Path) -> None:
        """A record whose length is over the limit is counted and stepped over."""
        path = tensorboard_run(tmp_path / "old", points=3)
        (events,) = path.glob("events.out.tfevents.*")
        with events.open("rb") as fh:
            records, offset, skipped = read_records(fh, 0, 1 << 20, limit=8)

        assert (0, 4, events.stat().st_size) == (len(records), skipped, offset)

    def test_a_symlink_out_of_the_run_is_not_read(self, tmp_path: Path) -> None:
        """An event file that resolves outside its run directory is never opened."""
        outside = tensorboard_run(tmp_path / "outside", points=5)
        run_dir = tmp_path / "runs" / "linked"
        run_dir.mkdir(parents=True)
        (target,) = outside.glob("events.out.tfevents.*")
        (run_dir / "events.out.tfevents.1.host").symlink_to(target)

        assert [] == open_run(run_dir).metrics

    def test_a_fifo_named_like_an_event_file_is_not_waited_on(self, tmp_path: Path) -> None:
        """A FIFO among the event files is refused (a reader would block for ever)."""
        run_dir = tensorboard_run(tmp_path / "old", points=5)
        os.mkfifo(run_dir / "events.out.tfevents.2.fifo")
        code = (
            "import sys; from goggles_io.runs import open_run; "
            "print(len(open_run(sys.argv[1]).series('loss')))"
        )
        done = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True,
                              text=True, timeout=60, env={**os.environ,
                              "PYTHONPATH": os.pathsep.join(sys.path)})  # fmt: skip

        assert ("5", 0) == (done.stdout.strip(), done.returncode), done.stderr


class TestHyperparameters:
    def test_cleanrl_table_parses_to_text_values(self) -> None:
        """CleanRL's table gives one key per row; a text that is no table gives None."""
        table = "|param|value|\n|-|-|\n|exp_name|ppo|\n|learning_rate|0.00025|\n|bad key|1|"

        assert {"exp_name": "ppo", "learning_rate": "0.00025"} == markdown_table(table)
        assert None is markdown_table("just some notes")

    def test_add_hparams_values_are_the_config(self, tmp_path: Path) -> None:
        """tensorboardX's add_hparams session values read back as typed config."""
        tensorboardx = pytest.importorskip("tensorboardX")
        path = tmp_path / "hp"
        with tensorboardx.SummaryWriter(str(path)) as writer:
            writer.add_hparams({"lr": 0.1, "batch": 64, "opt": "adam"}, {"hparam/acc": 0.9})

        assert {"lr": 0.1, "batch": 64, "opt": "adam"} == read_config(path)
        assert "run_dir" in describe_run(path) and [path] == find_runs(path)
