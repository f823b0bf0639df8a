"""Issue-5 sinks over the real socket transport, served by a host started elsewhere.

Each test attaches handlers in this process while a dedicated host, started in another
directory with a hostile environment (``foreign_host``), runs them: what reaches the collector,
W&B or the CSV files proves that specs carry the attaching process's context and that
``RunContext.set_config`` / ``register_run`` reach the host's instances.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import goggles_io as gg
from goggles_io.exceptions import MethodNotAllowedError
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.runs import RunContext, read_kv, register_run
from goggles_io.server.collector import Collector
from support import wait_until
from wandb_reader import read_offline_runs

KEY = "tok-7c1e-only-in-the-constructor"


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    with Collector(db_path=str(tmp_path / "c.sqlite"), api_key=KEY) as running:
        yield running


@pytest.fixture(autouse=True)
def _client_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This process: no remote settings in the environment, cwd without a .env."""
    for var in ("TELEMETRY_REMOTE_URL", "TELEMETRY_REMOTE_API_KEY", "TELEMETRY_NO_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


class TestRemoteOverHost:
    def test_points_arrive_once_in_order_with_config_and_no_key_leak(
        self, foreign_host, collector: Collector, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """The host's copy authenticates with the constructor's key, registers the config set
        after attach, delivers every point once in order, and the key is printed nowhere."""
        handler = RemoteHandler(
            server_url=collector.url, api_key=KEY, run_name="over-host", buffer_size=7
        )
        gg.attach(handler)
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path / "runs")
        register_run(run, handler)
        run.set_config({"lr": 0.5, "algo": "SAC"})
        logger = gg.get_logger("remote.test", with_metrics=True)
        for step in range(100):
            logger.scalar("loss", step / 10, step=step)
        gg.finish()
        run.close()
        got = collector.points(run.id)
        info = {r["run_id"]: r for r in collector.runs()}[run.id]
        out, err = capfd.readouterr()
        seen = out + err + foreign_host.stderr() + repr(handler) + str(handler.to_dict())
        seen += (run.dir / "run.kv").read_text()

        assert [s / 10 for s in range(100)] == [p["value"] for p in got]
        assert sorted(p["seq"] for p in got) == [p["seq"] for p in got]
        assert (0, "done") == (info["duplicates"], info["status"])
        assert {"lr": 0.5, "algo": "SAC"} == info["config"]
        assert KEY not in seen

    def test_method_outside_allow_list_refused_at_call(self, foreign_host, collector) -> None:
        """A method the attached class does not list in remote_methods raises at the call."""
        gg.attach(RemoteHandler(server_url=collector.url, api_key=KEY, name="r"))

        with pytest.raises(MethodNotAllowedError, match="'close'"):
            gg.call_handler("r", "close", None)

    def test_unknown_handler_counted_and_reported_once_by_host(
        self, foreign_host, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """A call to a name no process attached is refused by the host, reported once."""
        for _ in range(3):
            gg.call_handler("nobody", "record_config", {"a": 1})
        gg.flush(10.0)
        wait_until(lambda: "nobody" in foreign_host.stderr(), what="host reports the call")
        gg.finish()
        err = capfd.readouterr().err

        assert 1 == foreign_host.stderr().count("no handler named 'nobody'")
        assert 1 == err.count("no handler named 'nobody'")


class TestWandBOverHost:
    def test_config_and_history_read_back_one_run_per_scope(
        self, foreign_host, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Offline runs land under this process's WANDB_DIR with constructor and run config."""
        out = tmp_path / "wb"
        monkeypatch.setenv("WANDB_MODE", "offline")
        monkeypatch.setenv("WANDB_SILENT", "true")
        monkeypatch.setenv("WANDB_DIR", str(out))
        handler = gg.WandBHandler(
            project="p", run_name="main", group="g", tags=["t"], config={"batch": 64}
        )
        gg.attach(handler, scopes=["global", "episode_0"])
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path / "runs")
        register_run(run, handler)
        run.set_config("lr", 0.25)
        for step in range(5):
            gg.get_logger("a", with_metrics=True).scalar("loss", float(step), step=step)
            gg.get_logger("b", scope="episode_0", with_metrics=True).scalar(
                "reward", 2.0 * step, step=step
            )
        gg.finish()
        runs = read_offline_runs(out, expect=2)
        main, episode = runs["main"], runs["main-episode_0"]

        assert {"main", "main-episode_0"} == set(runs)
        assert list(range(5)) == [r["step"] for r in main["history"] if "loss" in r]
        assert [2.0 * s for s in range(5)] == [r["reward"] for r in episode["history"]]
        assert (64, 0.25, run.id) == (
            main["config"]["batch"],
            main["config"]["lr"],
            main["config"]["run"]["run_id"],
        )
        assert ("g", ["t"]) == (episode["group"], episode["tags"])
        assert not (foreign_host.cwd / "wandb").exists()


class TestCsvOverHost:
    def test_config_recorded_after_attach_reaches_metrics_config(
        self, foreign_host, tmp_path: Path
    ) -> None:
        """set_config after attach lands in the host-written metrics.config.kv."""
        handler = gg.CsvHandler(tmp_path / "csv")
        gg.attach(handler)
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path / "runs")
        run.set_config("before", 1)
        register_run(run, handler)
        run.set_config({"after": "yes"})
        gg.get_logger("c", with_metrics=True).scalar("loss", 1.0, step=0)
        gg.finish()

        assert {"before": "1", "after": "yes"} == dict(
            read_kv(tmp_path / "csv" / "metrics.config.kv")
        )
        header, row = (tmp_path / "csv" / "metrics.csv").read_text().splitlines()[:2]
        assert ("step,wall_time,loss", "0", "1.0") == (header, row.split(",")[0], row.split(",")[2])
        assert not os.path.exists(foreign_host.cwd / "csv")
