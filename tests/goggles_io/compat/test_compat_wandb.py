"""``goggles_io.compat.wandb``: a W&B script with its import changed writes a goggles_io run that
``open_run``, ``telemetry diff`` and ``telemetry ui`` read; W&B's steps, config and summary."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import goggles_io.compat.wandb as wandb
from goggles_io.exceptions import (
    ConfigConflictError,
    ConfigurationError,
    InvalidPayloadError,
    InvalidPayloadTypeError,
    NoRunError,
)
from goggles_io.runs import find_runs, open_run, read_run
from support import wait_until

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "12_from_wandb.py"
STEPS, EVERY = 300, 50


@pytest.fixture(autouse=True)
def _no_run_left() -> Iterator[None]:
    """Each test starts and ends without an open compat run."""
    yield
    while wandb.run is not None:
        wandb.finish()


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    return {**env, "PYTHONPATH": os.pathsep.join(sys.path), **more}


def _script(root: Path, *args: str) -> Path:
    """Run the example (default dedicated-host transport) into ``root``; its run directory."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--dir", str(root), "--total-steps", str(STEPS),
         "--eval-every", str(EVERY), *args],
        capture_output=True, text=True, timeout=180, env=_env(), check=False,
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1].removeprefix("run written to "))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    first = _script(root, "--seed", "0")
    second = _script(root, "--seed", "1", "--lr", "1e-3")
    return root, first, second


class TestTheExampleScript:
    def test_every_point_is_in_the_run(self, two_runs: tuple[Path, Path, Path]) -> None:
        """Each logged point is in ``open_run(...).history()``: per step, per epoch, the summary."""
        run = open_run(two_runs[1])
        table = run.history(pandas=False)

        assert run.info["status"] == "done" and run.info["tags"] == "example,seed0"
        assert ["best_eval_return", "charts/episodic_return", "epoch", "eval/return",
                "train/loss", "train/lr"] == run.metrics  # fmt: skip
        assert list(range(STEPS)) == table["step"]
        for name in ("train/loss", "train/lr", "charts/episodic_return"):
            assert STEPS == sum(v is not None for v in table[name]), name
        assert STEPS // EVERY == len(run.series("eval/return"))
        assert STEPS // EVERY == len(run.series("best_eval_return"))
        assert run.summary["best_eval_return"] == max(run.series("eval/return").value)
        assert ["weights"] == [m["name"] for m in run.media if m["kind"] == "histogram"]

    def test_define_metric_is_the_custom_x_axis(self, two_runs: tuple[Path, Path, Path]) -> None:
        """``define_metric("eval/*", step_metric="epoch")``: eval points carry the epoch as x."""
        series = open_run(two_runs[1]).series("eval/return")

        assert "epoch" == series.x_axis
        assert [float(e) for e in range(1, STEPS // EVERY + 1)] == list(series.x)

    def test_config_is_the_runs_config(self, two_runs: tuple[Path, Path, Path]) -> None:
        """``config=vars(args)`` and a nested ``config.update`` are the run's recorded config."""
        config = open_run(two_runs[1]).config

        assert {"lr": 3e-4, "seed": 0, "total_steps": STEPS, "eval_every": EVERY,
                "dir": str(two_runs[0]), "optimizer.name": "sgd",
                "optimizer.momentum": 0.9} == config  # fmt: skip

    def test_telemetry_diff_shows_what_differed(self, two_runs: tuple[Path, Path, Path]) -> None:
        """``telemetry diff`` of the two runs names lr and seed, and only those."""
        done = subprocess.run(
            [sys.executable, "-m", "experiment_telemetry", "diff", "--json",
             str(two_runs[1]), str(two_runs[2])],
            capture_output=True, text=True, timeout=120, env=_env(), check=True,
        )  # fmt: skip

        rows = json.loads(done.stdout)["rows"]
        assert ["lr", "seed"] == [row["key"] for row in rows if row["differs"]]

    def test_the_dashboard_shows_both_runs(
        self, two_runs: tuple[Path, Path, Path], tmp_path: Path
    ) -> None:
        """``telemetry ui ROOT``: /api/runs lists both with config and tags; /api/series has
        every train/loss point on the step axis and eval/return on the epoch axis."""
        pytest.importorskip("uvicorn")
        root, first, _ = two_runs
        proc = subprocess.Popen(
            [sys.executable, "-m", "experiment_telemetry", "ui", str(root), "--port", "0",
             "--index-dir", str(tmp_path / "index")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(),
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = next(line for line in proc.stdout if "http://" in line or proc.poll())
            url = re.search(r"http://[\d.:]+", line).group(0)  # type: ignore[union-attr]

            def runs() -> dict[str, dict[str, Any]]:
                return {r["run_id"]: r for r in _get(f"{url}/api/runs")["runs"]}

            want = 3 * STEPS + 3 * (STEPS // EVERY)  # loss, lr, return; eval, epoch, best
            wait_until(
                lambda: (
                    len(runs()) == 2
                    and all(sum(r["metrics"].values()) >= want for r in runs().values())
                ),
                timeout_s=120,
                interval_s=0.1,
                what="both runs indexed",
            )
            row = runs()[read_run(first)["run_id"]]
            loss = _series(url, row["key"], "train/loss", "step")
            evals = _series(url, row["key"], "eval/return", "custom")
        finally:
            proc.terminate()
            proc.wait(timeout=60)

        assert row["status"] == "done" and row["group"] == "from-wandb"
        assert ["example", "seed0"] == row["tags"]
        assert 3e-4 == row["config"]["lr"] and "sgd" == row["config"]["optimizer.name"]
        assert STEPS == loss["total"] and STEPS == len(loss["x"])
        assert "epoch" == evals["x_axis"]
        assert [float(e) for e in range(1, STEPS // EVERY + 1)] == evals["x"]


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


def _series(url: str, key: str, metric: str, axis: str) -> dict[str, Any]:
    query = urllib.parse.urlencode({"run": key, "metric": metric, "axis": axis, "n": 4096})
    return dict(_get(f"{url}/api/series?{query}")["series"][key])


class TestSteps:
    def test_a_step_going_backwards_is_logged_and_said_once(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """W&B drops a step below the current one; here it is logged, and stderr says so once."""
        run = wandb.init(project="p", dir=tmp_path)
        for step in (5, 6, 2, 3, 1):
            wandb.log({"loss": float(step)}, step=step)
        wandb.finish()

        series = open_run(run.path).series("loss")
        assert [5.0, 6.0, 2.0, 3.0, 1.0] == list(series.step)
        assert 1 == capsys.readouterr().err.count("is below the current step")

    def test_steps_follow_wandb_commit_rules(self, tmp_path: Path) -> None:
        """No step: commit and advance; ``commit=False`` stays; ``step=`` collects until it changes."""
        run = wandb.init(dir=tmp_path)
        wandb.log({"a": 1.0})  # 0
        wandb.log({"b": 1.0}, commit=False)  # 1, kept open
        wandb.log({"c": 1.0})  # 1, then 2
        wandb.log({"d": 1.0}, step=7)
        wandb.log({"e": 1.0})  # still 7, then 8
        wandb.log({"f": 1.0})
        wandb.finish()

        steps = {m: list(open_run(run.path).series(m).step) for m in "abcdef"}
        assert {"a": [0.0], "b": [1.0], "c": [1.0], "d": [7.0], "e": [7.0], "f": [8.0]} == steps

    def test_nested_dicts_flatten_and_values_are_routed(self, tmp_path: Path) -> None:
        """``{"a": {"b": 1}}`` is ``a/b``; numpy scalars are numbers; arrays, Image, Histogram
        and strings are events of their kind."""
        run = wandb.init(dir=tmp_path)
        wandb.log({
            "a": {"b": 1, "c": {"d": np.float32(2.5)}}, "flag": True, "none": None,
            "img": wandb.Image(np.zeros((3, 8, 8), dtype=np.uint8), caption="chw"),
            "h": wandb.Histogram(np.arange(10.0), num_bins=5), "arr": [1.0, 2.0, 3.0],
            "note": "hello",
        })  # fmt: skip
        wandb.finish()

        back = open_run(run.path)
        assert ["a/b", "a/c/d", "flag"] == back.metrics
        assert 2.5 == back.series("a/c/d").value[0]
        kinds = sorted((m["kind"], m["name"]) for m in back.media)
        assert [
            ("histogram", "arr"),
            ("histogram", "h"),
            ("image", "img"),
            ("text", "note"),
        ] == kinds
        assert ["hello"] == [
            m["text"] for m in back.media if m["kind"] == "text"
        ]  # the media view's

    def test_an_unsupported_value_is_a_clear_error(self, tmp_path: Path) -> None:
        """An object W&B-compat cannot log raises naming its key and type; nothing half-logged."""
        wandb.init(dir=tmp_path)

        with pytest.raises(InvalidPayloadTypeError, match=r"'thing'.*got object"):
            wandb.log({"thing": object()})
        with pytest.raises(InvalidPayloadError, match="step must be an int >= 0"):
            wandb.log({"x": 1.0}, step=-1)
        with pytest.raises(InvalidPayloadTypeError, match="not paths"):
            wandb.Image("picture.png")
        with pytest.raises(InvalidPayloadError, match="sequence="):
            wandb.Histogram(np_histogram=([1], [0, 1]))


class TestConfigAndSummary:
    def test_config_access_and_a_changed_value(self, tmp_path: Path) -> None:
        """Item and attribute access; changing a value raises as W&B does; with
        ``allow_val_change`` the recorded config keeps its first value, said once."""
        run = wandb.init(dir=tmp_path, config={"lr": 0.1, "net": {"width": 64}})
        wandb.config.batch = 32
        wandb.config["epochs"] = 3

        with pytest.raises(ConfigConflictError):
            wandb.config.update({"lr": 0.2})
        wandb.config.update({"lr": 0.3, "extra": 1}, allow_val_change=True)
        assert (0.3, 64, 32) == (wandb.config.lr, wandb.config["net"]["width"], wandb.config.batch)
        wandb.finish()

        recorded = open_run(run.path).config
        assert {"lr": 0.1, "net.width": 64, "batch": 32, "epochs": 3, "extra": 1} == recorded

    def test_summary_is_the_metrics_last_value(self, tmp_path: Path) -> None:
        """``summary[k] = number`` is k's last point at the latest step; reading gives the last
        logged values too."""
        run = wandb.init(dir=tmp_path)
        for step in range(3):
            wandb.log({"loss": 1.0 / (step + 1)}, step=step)
        wandb.summary["best"] = 0.9
        wandb.summary.update({"eval": {"acc": 0.8}})
        assert 1.0 / 3 == wandb.summary["loss"] and 0.9 == wandb.summary.best
        wandb.finish()

        back = open_run(run.path)
        assert {"best": 0.9, "eval/acc": 0.8, "loss": 1.0 / 3} == back.summary
        assert [2.0] == list(back.series("best").step)


class TestRunLifecycle:
    def test_before_init_and_after_finish(self, tmp_path: Path) -> None:
        """Without a run, log/config/summary raise NoRunError; finish does nothing."""
        wandb.finish()
        with pytest.raises(NoRunError, match=r"wandb\.init"):
            wandb.log({"a": 1.0})
        with pytest.raises(NoRunError):
            wandb.config.update({"a": 1})
        with pytest.raises(NoRunError):
            wandb.summary["a"] = 1
        run = wandb.init(dir=tmp_path)
        run.finish()
        assert wandb.run is None
        with pytest.raises(NoRunError, match="finished"):
            run.log({"a": 1.0})

    def test_a_second_init_finishes_the_first(self, tmp_path: Path) -> None:
        """W&B's default reinit: the open run is finished; ``reinit=False`` returns it."""
        first = wandb.init(dir=tmp_path, name="one")
        assert first is wandb.init(dir=tmp_path, reinit=False)
        second = wandb.init(dir=tmp_path, name="two")

        assert first.finished and wandb.run is second
        assert "done" == read_run(first.path)["status"]

    def test_context_manager_marks_a_failure(self, tmp_path: Path) -> None:
        """An exception inside ``with wandb.init()`` closes the run as failed."""
        with pytest.raises(ZeroDivisionError), wandb.init(dir=tmp_path) as run:
            wandb.log({"a": 1.0})
            _ = 1 / 0

        assert "failed" == read_run(run.path)["status"]

    def test_disabled_mode_writes_nothing(self, tmp_path: Path) -> None:
        """``mode="disabled"``: every call works, no folder is made."""
        wandb.init(dir=tmp_path / "runs", mode="disabled", config={"a": 1})
        wandb.log({"loss": 1.0})
        wandb.summary["x"] = 1.0
        wandb.finish()

        assert not (tmp_path / "runs").exists()

    def test_bad_arguments_and_ignored_ones(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A bad mode or a bare-string tags raise; unknown init arguments are said once."""
        with pytest.raises(ConfigurationError, match="mode must be one of"):
            wandb.init(dir=tmp_path, mode="cloud")
        with pytest.raises(ConfigurationError, match="tags must be a list"):
            wandb.init(dir=tmp_path, tags="baseline")
        wandb.init(dir=tmp_path, entity="team", resume="allow")
        wandb.finish()
        wandb.init(dir=tmp_path, entity="team")

        err = capsys.readouterr().err
        assert 1 == err.count("entity=") and 1 == err.count("resume=")
        with pytest.raises(AttributeError, match="has no 'Table'"):
            _ = wandb.Table

    def test_a_script_that_dies_leaves_a_failed_run(self, tmp_path: Path) -> None:
        """A script raising without ``finish()`` leaves its run ``failed``, every point kept."""
        code = (
            "import goggles_io.compat.wandb as wandb\n"
            f"wandb.init(dir={str(tmp_path)!r})\n"
            "for s in range(100): wandb.log({'loss': s}, step=s)\n"
            "raise SystemExit(1) if False else ValueError('boom')\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, env=_env(), check=False)  # fmt: skip

        assert 1 == done.returncode and "boom" in done.stderr
        (path,) = find_runs(tmp_path)
        assert "failed" == read_run(path)["status"]
        assert 100 == len(open_run(path).series("loss"))
