"""Tests for goggles_io.handlers.wandb with the real wandb SDK in offline mode, read back from disk."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import goggles_io as gg
from goggles_io.exceptions import ConfigurationError
from goggles_io.handlers.wandb import WandBHandler
from goggles_io.runs import RunContext, register_run
from wandb_reader import read_offline_runs

pytest.importorskip("wandb")


@pytest.fixture
def wandb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    return tmp_path


class TestTags:
    def test_bare_string_rejected(self) -> None:
        """A bare string for tags is rejected at construction, showing the value."""
        with pytest.raises(ConfigurationError, match="'baseline'"):
            WandBHandler(project="p", tags="baseline")  # type: ignore[arg-type]

    def test_non_string_tag_rejected(self) -> None:
        """A tag that is not a str is rejected at construction."""
        with pytest.raises(ConfigurationError, match="tags"):
            WandBHandler(project="p", tags=["ok", 3])  # type: ignore[list-item]

    def test_config_must_be_mapping(self) -> None:
        """A config that is not a mapping is rejected at construction."""
        with pytest.raises(ConfigurationError, match="config"):
            WandBHandler(project="p", config=[("lr", 1)])  # type: ignore[arg-type]

    def test_env_must_be_mapping(self) -> None:
        """An env that is not a mapping is rejected at construction, naming env."""
        with pytest.raises(ConfigurationError, match="env must be a mapping"):
            WandBHandler(project="p", env=["WANDB_MODE=offline"])  # type: ignore[arg-type]


@pytest.mark.slow
class TestSpecContext:
    def test_dir_made_absolute_at_construction(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A relative dir, WANDB_DIR, or the cwd becomes an absolute dir in the spec."""
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("WANDB_DIR", raising=False)
        from_arg = WandBHandler(dir="rel").to_dict()["data"]["dir"]
        from_cwd = WandBHandler().to_dict()["data"]["dir"]
        monkeypatch.setenv("WANDB_DIR", "envdir")
        from_env = WandBHandler().to_dict()["data"]["dir"]

        assert [str(tmp_path / "rel"), str(tmp_path), str(tmp_path / "envdir")] == [
            from_arg,
            from_cwd,
            from_env,
        ]

    def test_mode_from_environment_at_construction(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """WANDB_MODE is read at construction; an explicit mode wins."""
        monkeypatch.setenv("WANDB_MODE", "offline")

        assert "offline" == WandBHandler().to_dict()["data"]["mode"]
        assert "disabled" == WandBHandler(mode="disabled").to_dict()["data"]["mode"]

    def test_env_carried_without_key_or_service(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """WANDB_* settings are carried; WANDB_API_KEY only as a secret; WANDB_SERVICE never."""
        monkeypatch.setenv("WANDB_SILENT", "true")
        monkeypatch.setenv("WANDB_API_KEY", "wandb-secret-123")
        monkeypatch.setenv("WANDB_SERVICE", "3-1-unix-/tmp/x")
        spec = WandBHandler().to_dict()

        assert "true" == spec["data"]["env"]["WANDB_SILENT"]
        assert {"WANDB_API_KEY", "WANDB_SERVICE"}.isdisjoint(spec["data"]["env"])
        assert "wandb-secret-123" == spec["secrets"]["api_key"].reveal()
        assert "wandb-secret-123" not in str(spec)


class TestOfflineRun:
    def test_history_config_tags_group_read_back(self, wandb_env: Path) -> None:
        """Scalars of one step land in one row; config, tags and group are written."""
        handler = WandBHandler(
            project="p",
            run_name="r",
            group="g",
            tags=["a", "b"],
            config={"lr": 0.1},
            dir=str(wandb_env),
        )
        run = RunContext(project="p", driver="d", slug="s", root=wandb_env / "runs")
        register_run(run, handler)
        run.set_config("algo", "sac")
        gg.attach(handler, scopes=["global"])
        logger = gg.get_logger("t", with_metrics=True)
        for step in range(3):
            logger.scalar("loss", step / 2, step=step)
            logger.scalar("acc", step / 4, step=step)
        logger.histogram(np.arange(10.0), step=3, name="h")
        logger.image(np.zeros((4, 4, 3), np.uint8), step=3, name="img")
        logger.video(np.zeros((2, 3, 4, 4), np.uint8), step=3, name="vid", fps=5)
        logger.table(["a", "b"], [[1, "x"]], step=3, name="tab")
        logger.text("hello", step=3, name="note")
        gg.finish()
        run.close()
        got = read_offline_runs(wandb_env)["r"]

        assert ("g", ["a", "b"]) == (got["group"], got["tags"])
        assert {"lr": 0.1, "algo": "sac"}.items() <= got["config"].items()
        assert run.id == got["config"]["run"]["run_id"]
        scalars = [
            {k: v for k, v in row.items() if k in ("loss", "acc", "step")}
            for row in got["history"][:3]
        ]
        assert [{"loss": s / 2, "acc": s / 4, "step": s} for s in range(3)] == scalars
        media = got["history"][3]
        assert ("histogram", "image-file", "video-file", "table-file", "hello") == (
            media["h/_type"],
            media["img/_type"],
            media["vid/_type"],
            media["tab/_type"],
            media["note"],
        )

    def test_wandb_init_kwargs_reach_the_run(self, wandb_env: Path) -> None:
        """wandb_init_kwargs (robo-goggles' name) are passed to wandb.init: notes and job_type."""
        handler = WandBHandler(
            project="p",
            run_name="kw",
            dir=str(wandb_env),
            reinit="create_new",
            wandb_init_kwargs={"job_type": "eval", "notes": "from kwargs"},
        )
        gg.attach(handler, scopes=["global"])
        gg.get_logger("k", with_metrics=True).scalar("x", 1.0, step=0)
        gg.finish()
        got = read_offline_runs(wandb_env)["kw"]

        assert ("eval", "from kwargs") == (got["job_type"], got["notes"])

    def test_numeric_keywords_are_columns_for_custom_axes(self, wandb_env: Path) -> None:
        """scalar(..., sim_time=t, custom_step={"time": t}) logs sim_time and custom_step.time."""
        gg.attach(WandBHandler(project="p", run_name="axes", dir=str(wandb_env)), scopes=["global"])
        log = gg.get_logger("a", with_metrics=True)
        for i in range(3):
            log.scalar("signal", i * 2.0, step=i, sim_time=i / 30, custom_step={"time": i / 10})
        gg.finish()
        rows = read_offline_runs(wandb_env)["axes"]["history"]

        got = [(r["signal"], r["sim_time"], r["custom_step.time"]) for r in rows]
        assert [(i * 2.0, i / 30, i / 10) for i in range(3)] == got

    def test_wandb_init_kwargs_must_be_a_mapping(self) -> None:
        """A list for wandb_init_kwargs is refused at construction, naming the argument."""
        with pytest.raises(ConfigurationError, match="wandb_init_kwargs"):
            WandBHandler(project="p", wandb_init_kwargs=[("notes", "x")])  # type: ignore[arg-type]

    def test_one_run_per_scope_in_one_group(self, wandb_env: Path) -> None:
        """Each scope gets its own run, named run-<scope> as robo-goggles does, in one group."""
        handler = WandBHandler(project="p", group="multi", dir=str(wandb_env))
        gg.attach(handler, scopes=["global", "episode_0", "episode_1"])
        for episode in range(2):
            ep_logger = gg.get_logger(scope=f"episode_{episode}", with_metrics=True)
            for step in range(3):
                ep_logger.scalar("reward", episode * 10 + step, step=step)
        gg.get_logger("g", with_metrics=True).scalar("total", 1.0, step=0)
        gg.finish()
        runs = read_offline_runs(wandb_env, expect=3)

        assert {"run-global", "run-episode_0", "run-episode_1"} == runs.keys()
        assert {"multi"} == {r["group"] for r in runs.values()}
        assert [10, 11, 12] == [row["reward"] for row in runs["run-episode_1"]["history"]]
        assert "episode_1" == runs["run-episode_1"]["config"]["scope"]

    def test_flush_commits_latest_step_and_backward_steps_kept(self, wandb_env: Path) -> None:
        """flush() commits the latest step at once, and a step going backwards is kept, not dropped."""
        handler = WandBHandler(project="p", run_name="back", dir=str(wandb_env))
        handler.open()
        for step in (0, 1, 2, 1):
            handler.handle(
                gg.Event(kind=gg.Kind.METRIC, scope="global", payload={"x": float(step)}, step=step)
            )
        handler.flush()
        handler.handle(
            gg.Event(
                kind=gg.Kind.METRIC,
                scope="global",
                payload={"x": 9.0},
                step=9,
                extra={"x_axis": "time", "x": 0.5},
            )
        )
        handler.close()
        got = read_offline_runs(wandb_env)["back"]

        assert [0, 1, 2, 1, 9] == [row["step"] for row in got["history"]]
        assert 0.5 == got["history"][-1]["time"]
        assert "time" == got["axes"]["x"]
        assert 1 == handler.backward_steps


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def run_example(name: str, tmp_path: Path) -> dict[str, dict[str, Any]]:
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(tmp_path),
    }
    subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return read_offline_runs(tmp_path, expect=4 if "multiple" in name else 1)


@pytest.mark.slow
class TestExamples:
    def test_example_04_reads_back(self, tmp_path: Path) -> None:
        """examples/04_wandb.py writes one run with 100 scalar rows, its group and tags."""
        run = run_example("04_wandb.py", tmp_path)["run_1"]

        assert ("experiment_v2", ["baseline", "smoke-test"]) == (run["group"], run["tags"])
        assert list(range(100)) == [row["step"] for row in run["history"] if "loss" in row]

    def test_example_05_reads_back(self, tmp_path: Path) -> None:
        """examples/05_wandb_multiple_runs.py writes one run per episode plus the global run."""
        runs = run_example("05_wandb_multiple_runs.py", tmp_path)

        assert {"run-episode_0", "run-episode_1", "run-episode_2", "run-global"} == runs.keys()
        assert {"multiple_runs"} == {r["group"] for r in runs.values()}

    def test_example_09_reads_back(self, tmp_path: Path) -> None:
        """examples/09_custom_step_axis.py plots joint_angle against sim_time_s."""
        run = run_example("09_custom_step_axis.py", tmp_path)["custom_axis"]

        assert "sim_time_s" == run["axes"]["joint_angle"]
        assert 0.05 == pytest.approx(run["history"][1]["sim_time_s"])


class TestAlert:
    def test_alert_is_recorded_in_the_offline_run(self, wandb_env: Path) -> None:
        """alert(payload) through call_handler lands as a W&B alert record of the scope's run."""
        handler = WandBHandler(project="p", run_name="r", dir=str(wandb_env), name="wb-alert")
        gg.attach(handler, scopes=["train"])
        gg.call_handler(
            "wb-alert", "alert", {"scope": "train", "title": "t", "text": "x", "level": "ERROR"}
        )
        gg.finish()

        (run,) = read_offline_runs(wandb_env).values()
        assert [{"title": "t", "text": "x", "level": "ERROR"}] == run["alerts"]

    def test_bad_alert_is_counted_not_raised(self, wandb_env: Path) -> None:
        """An unknown level fails inside wandb; the handler counts it and carries on."""
        handler = WandBHandler(project="p", run_name="r", dir=str(wandb_env), name="wb-bad")
        handler.alert({"title": "t", "text": "x", "level": "LOUD"})
        handler.close()

        assert 1 == handler.alert_errors


@pytest.mark.slow
class TestRoboGogglesKinds:
    def test_trajectories_are_a_plotly_figure(self, wandb_env: Path) -> None:
        """trajectories() reaches W&B as a plotly-file whose figure has the paths, starts, ends."""
        gg.attach(WandBHandler(project="p", run_name="traj", dir=str(wandb_env)), scopes=["global"])
        paths = np.cumsum(np.random.default_rng(0).normal(size=(4, 30, 2)), axis=1)
        gg.get_logger("t", with_metrics=True).trajectories(paths, name="paths", step=1)
        gg.finish()
        run = read_offline_runs(wandb_env)["traj"]

        row = run["history"][0]
        figure = json.loads((run["dir"] / "files" / row["paths/path"]).read_text())
        assert "plotly-file" == row["paths/_type"]
        assert ["paths", "start", "end"] == [trace["name"] for trace in figure["data"]]
        xs = figure["data"][0]["x"]  # plotly writes arrays as base64 "bdata"
        xs = np.frombuffer(base64.b64decode(xs["bdata"]), xs["dtype"]) if "bdata" in xs else xs
        assert 4 * 31 == len(xs)  # 30 points and a gap per path

    def test_vector_field_is_an_image_of_its_picture(self, wandb_env: Path) -> None:
        """vector_field() reaches W&B as an image-file (its drawn picture)."""
        gg.attach(WandBHandler(project="p", run_name="vf", dir=str(wandb_env)), scopes=["global"])
        field = np.random.default_rng(1).normal(size=(16, 16, 2))
        gg.get_logger("v", with_metrics=True).vector_field(
            field, name="flow", step=2, mode="vorticity"
        )
        gg.finish()
        row = read_offline_runs(wandb_env)["vf"]["history"][0]

        assert ("image-file", "png") == (row["flow/_type"], row["flow/format"])

    def test_static_histogram_is_a_custom_chart(self, wandb_env: Path) -> None:
        """histogram(static=True) is a table-backed custom chart, static=False a histogram."""
        gg.attach(WandBHandler(project="p", run_name="hist", dir=str(wandb_env)), scopes=["global"])
        log = gg.get_logger("h", with_metrics=True)
        log.histogram(np.arange(20.0), name="fixed", static=True, step=3)
        log.histogram(np.arange(20.0), name="moving", step=3)
        gg.finish()
        row = read_offline_runs(wandb_env)["hist"]["history"][0]

        assert ("table-file", "histogram") == (row["fixed_table/_type"], row["moving/_type"])

    def test_artifacts_are_uploaded_with_name_type_aliases(
        self, wandb_env: Path, tmp_path: Path
    ) -> None:
        """A {"path": dir} reference, a file reference and content each become a W&B artifact."""
        checkpoint = tmp_path / "ckpt"
        checkpoint.mkdir()
        (checkpoint / "params.npy").write_bytes(b"p")
        (checkpoint / "opt_state.npy").write_bytes(b"o")
        notes = tmp_path / "notes.txt"
        notes.write_text("hello")
        gg.attach(WandBHandler(project="p", run_name="art", dir=str(wandb_env)), scopes=["global"])
        log = gg.get_logger("a", with_metrics=True)
        log.artifact({"path": checkpoint, "name": "model_checkpoint", "type": "checkpoint",
                      "aliases": ["best", "step-100"]}, step=100)  # fmt: skip
        log.artifact({"path": str(notes), "name": "random_artifact", "type": "misc"}, step=100)
        log.artifact("a,b\n1,2", name="table", format="csv", step=100)
        gg.finish()
        arts = {a["name"]: a for a in read_offline_runs(wandb_env)["art"]["artifacts"]}

        assert (["best", "latest", "step-100"], "checkpoint", ["opt_state.npy", "params.npy"]) == (
            arts["model_checkpoint"]["aliases"], arts["model_checkpoint"]["type"],
            arts["model_checkpoint"]["entries"],
        )  # fmt: skip
        assert (["notes.txt"], "misc") == (
            arts["random_artifact"]["entries"],
            arts["random_artifact"]["type"],
        )
        assert (["table.csv"], "csv") == (
            arts["table"]["entries"],
            arts["table"]["metadata"]["format"],
        )

    def test_entity_and_positional_order_are_robo_goggles(self) -> None:
        """WandBHandler("proj", "team", "run") is project, entity, run_name, as in robo-goggles."""
        data = WandBHandler("proj", "team", "run").to_dict()["data"]

        assert ("proj", "team", "run") == (data["project"], data["entity"], data["run_name"])
