"""goggles_io.compat.tensorboard: TensorBoard's writer API logging into a goggles_io run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from goggles_io.compat.tensorboard import SummaryWriter, patch, unpatch
from goggles_io.runs import find_runs, open_run, read_config
from goggles_io.runs.tfevents import read_records, tf_events

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "cleanrl_ppo.py"
COMPAT_IMPORT = "from goggles_io.compat.tensorboard import SummaryWriter"
UNCHANGED = """
import runpy, sys
from goggles_io.compat.tensorboard import patch
patch(keep_tfevents=True)
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""
LOSSES = ["losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/old_approx_kl",
          "losses/approx_kl", "losses/clipfrac", "losses/explained_variance"]  # fmt: skip


def _env() -> dict[str, str]:
    """A user's environment: the default (dedicated host) transport, this checkout first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    return {**env, "PYTHONPATH": os.pathsep.join(sys.path)}


def run_script(cwd: Path, *argv: str) -> tuple[Path, str]:
    """Run a training script in ``cwd``; its new run directory and its stdout."""
    before = set(find_runs(cwd / "runs")) if (cwd / "runs").is_dir() else set()
    done = subprocess.run([sys.executable, *argv], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=240)  # fmt: skip
    assert 0 == done.returncode, done.stderr[-3000:]
    (run_dir,) = set(find_runs(cwd / "runs")) - before
    return run_dir, done.stdout


def tensorboardx_script(folder: Path) -> Path:
    """The CleanRL-shaped example as a TensorBoard script: only its import line differs."""
    text = SCRIPT.read_text()
    assert 1 == text.count(COMPAT_IMPORT)
    unchanged = folder / "cleanrl_ppo.py"
    unchanged.write_text(text.replace(COMPAT_IMPORT, "from tensorboardX import SummaryWriter"))
    return unchanged


def check_every_point(run_dir: Path, stdout: str, seed: int) -> None:
    """Every printed episode and iteration is a point of the run; the table is its config."""
    run = open_run(run_dir)
    episodes = stdout.count("episodic_return=")
    iterations = stdout.count("SPS:")
    history = run.history(pandas=False)

    assert run.info["status"] == "done"
    assert (episodes, episodes) == (
        len(run.series("charts/episodic_return")),
        len(run.series("charts/episodic_length")),
    )
    assert [iterations] * 9 == [
        len(run.series(m)) for m in [*LOSSES, "charts/SPS", "charts/learning_rate"]
    ]
    assert {
        "seed": seed,
        "learning_rate": 0.00025,
        "num_envs": 4,
        "env_id": "Chain-v0",
    }.items() <= run.config.items()
    assert len(history["step"]) >= episodes and 0 == len(run.unreadable)


@pytest.mark.slow
class TestCleanRLScript:
    def test_one_import_changed_every_point_and_the_hyperparameters(self, tmp_path: Path) -> None:
        """The example, its import line changed, writes a run with every point and its config."""
        run_dir, stdout = run_script(
            tmp_path, str(SCRIPT), "--seed", "3", "--total-timesteps", "4096"
        )

        check_every_point(run_dir, stdout, seed=3)

    def test_unchanged_tensorboardx_script_under_patch(self, tmp_path: Path) -> None:
        """The same script importing tensorboardX, run under patch(keep_tfevents=True), gives
        the same run; TensorBoard's own event file beside it holds every point too."""
        pytest.importorskip("tensorboardX")
        script = tensorboardx_script(tmp_path)
        run_dir, stdout = run_script(
            tmp_path, "-c", UNCHANGED, str(script), "--seed", "4", "--total-timesteps", "4096"
        )
        check_every_point(run_dir, stdout, seed=4)
        (events,) = run_dir.glob("events.out.tfevents.*")
        with events.open("rb") as fh:
            mirrored = tf_events(read_records(fh, 0, 1 << 30)[0])

        assert stdout.count("episodic_return=") == len(mirrored.metrics["charts/episodic_return"])

    def test_telemetry_diff_of_two_runs_names_the_seed(self, tmp_path: Path) -> None:
        """Two runs of the script differ in their seed, and `telemetry diff` says so."""
        first, _ = run_script(tmp_path, str(SCRIPT), "--seed", "1", "--total-timesteps", "1024")
        second, _ = run_script(tmp_path, str(SCRIPT), "--seed", "2", "--total-timesteps", "1024")
        done = subprocess.run(
            [sys.executable, "-m", "experiment_telemetry", "diff", "--json", str(first), str(second)],
            env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        differing = [row["key"] for row in json.loads(done.stdout)["rows"] if row["differs"]]

        assert (0, ["seed"]) == (done.returncode, differing), done.stderr


class TestWriterCalls:
    def test_scalars_steps_walltime_and_add_scalars(self, tmp_path: Path) -> None:
        """add_scalar keeps its step and walltime (as the point's time); add_scalars logs
        <main>/<tag>; a step left out is the previous + 1; numpy scalars are taken."""
        with SummaryWriter(tmp_path / "runs" / "exp") as writer:
            writer.add_scalar("loss", np.float32(0.5), 10, walltime=1234.5)
            writer.add_scalar("loss", 0.25)
            writer.add_scalars("pair", {"a": 1, "b": np.int64(2)}, 3)
        run = open_run(writer.log_dir)
        loss = run.series("loss")

        assert Path(writer.log_dir).parent == tmp_path / "runs"
        assert ([10.0, 11.0], [0.5, 0.25], 1234.5) == (list(loss.step), list(loss.value), loss.x[0])
        assert ([3.0], [2.0]) == (list(run.series("pair/a").step), list(run.series("pair/b").value))
        assert "done" == run.info["status"]

    def test_media_calls_land_as_goggles_media(self, tmp_path: Path) -> None:
        """Images (CHW float, NCHW batch as a grid), video, histogram and figure are media items."""
        with SummaryWriter(tmp_path / "runs" / "media") as writer:
            writer.add_image("img", np.ones((3, 8, 6)) * 0.5, 1)
            writer.add_images("batch", np.zeros((4, 3, 8, 8), dtype=np.uint8), 1)
            writer.add_video("clip", np.random.default_rng(0).random((1, 5, 3, 8, 8)), 2, fps=10)
            writer.add_histogram("weights", np.arange(100.0), 3)
            figure = pytest.importorskip("matplotlib.figure").Figure(figsize=(1, 1))
            writer.add_figure("fig", figure, 4)
        media = {(m["kind"], m["name"], m["step"]) for m in open_run(writer.log_dir).media}

        assert {("image", "img", 1), ("image", "batch", 1), ("video", "clip", 2),
                ("histogram", "weights", 3), ("image", "fig", 4)} == media  # fmt: skip

    def test_hparams_and_text_tables_are_config(self, tmp_path: Path) -> None:
        """add_hparams records the config and logs its metrics; a hyperparameters table too."""
        with SummaryWriter(tmp_path / "runs" / "hp") as writer:
            writer.add_text("hyperparameters", "|param|value|\n|-|-|\n|gamma|0.99|")
            writer.add_text("notes", "|a|b|\n|-|-|\n|x|1|")  # another tag: text, not config
            writer.add_hparams({"lr": 0.1, "opt": "adam"}, {"hparam/acc": 0.9})
            writer.add_custom_scalars({"losses": {"all": ["Multiline", ["loss/.*"]]}})

        assert {"gamma": 0.99, "lr": 0.1, "opt": "adam"} == read_config(writer.log_dir)
        assert [0.9] == list(open_run(writer.log_dir).series("hparam/acc").value)
        assert (Path(writer.log_dir) / "artifacts" / "custom_scalars_0.json").is_file()

    def test_an_exception_in_the_block_marks_the_run_failed(self, tmp_path: Path) -> None:
        """Leaving the with block by an exception closes the run as failed."""
        with pytest.raises(RuntimeError), SummaryWriter(tmp_path / "runs" / "bad") as writer:
            raise RuntimeError("diverged")

        assert "failed" == open_run(writer.log_dir).info["status"]

    def test_a_closed_writer_refuses_and_unknown_kinds_warn_once(self, tmp_path: Path) -> None:
        """add_graph has no goggles_io kind: one warning, nothing logged; after close a call raises."""
        writer = SummaryWriter(tmp_path / "runs" / "x")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            writer.add_graph(object())
            writer.add_graph(object())
        writer.close()

        assert 1 == len([w for w in caught if "add_graph" in str(w.message)])
        with pytest.raises(ValueError, match="is closed"):
            writer.add_scalar("loss", 1.0, 0)

    def test_a_bad_step_or_value_names_itself(self, tmp_path: Path) -> None:
        """A step or a scalar that is no number raises naming the argument."""
        with SummaryWriter(tmp_path / "runs" / "y") as writer:
            with pytest.raises(ValueError, match="global_step"):
                writer.add_scalar("loss", 1.0, "ten")
            with pytest.raises(ValueError, match="scalar_value"):
                writer.add_scalar("loss", "high", 0)


class TestPatch:
    def test_patch_builds_ours_and_unpatch_gives_the_original_back(self, tmp_path: Path) -> None:
        """After patch() tensorboardX's writer is ours (subclasses untouched); unpatch undoes it."""
        tensorboardx = pytest.importorskip("tensorboardX")

        class Mine(tensorboardx.SummaryWriter):
            pass

        patch()
        try:
            ours = tensorboardx.SummaryWriter(str(tmp_path / "runs" / "p"))
            theirs = Mine(str(tmp_path / "plain"))
        finally:
            unpatch()
        original = tensorboardx.SummaryWriter(str(tmp_path / "after"))
        for writer in (ours, theirs, original):
            writer.close()

        assert (True, False, False) == tuple(
            isinstance(w, SummaryWriter) for w in (ours, theirs, original)
        )
        assert ["log.jsonl"] == [p.name for p in Path(ours.log_dir).glob("log.jsonl")]
        assert [] == list(Path(ours.log_dir).glob("events.out.tfevents.*"))
