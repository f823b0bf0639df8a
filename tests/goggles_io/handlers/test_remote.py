"""Tests for goggles_io.handlers.remote against the real collector on 127.0.0.1."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import goggles_io as gg
from goggles_io.exceptions import ConfigurationError, InvalidNameError, InvalidPayloadError
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.runs import RunContext, read_kv, register_run
from goggles_io.server.collector import Collector
from support import wait_until

KEY = "tok-3f9a1c-secret"


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    with Collector(db_path=str(tmp_path / "c.sqlite"), api_key=KEY) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_remote_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the developer's environment and .env files out of these tests."""
    for var in ("TELEMETRY_REMOTE_URL", "TELEMETRY_REMOTE_API_KEY", "TELEMETRY_NO_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def make(collector: Collector, **kwargs: object) -> RemoteHandler:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("run_name", "test run")
    return RemoteHandler(server_url=collector.url, **kwargs)  # type: ignore[arg-type]


class TestDelivery:
    def test_every_point_exactly_once_in_order(self, collector: Collector) -> None:
        """Points logged across many batches arrive once each, in logging order."""
        handler = make(collector, buffer_size=7)
        for step in range(100):
            handler.log_scalar("loss", step / 10, step)
        handler.close()
        got = collector.points(handler.run_id)

        assert list(range(1, 101)) == [p["seq"] for p in got]
        assert [s / 10 for s in range(100)] == [p["value"] for p in got]
        assert 0 == collector.runs()[0]["duplicates"]

    def test_close_sends_finish(self, collector: Collector) -> None:
        """close() sends the finish: the run is marked done on the collector."""
        handler = make(collector)
        handler.log_scalar("loss", 1.0, 0)
        handler.close()

        assert "done" == collector.runs()[0]["status"]

    def test_close_prints_tally(
        self, collector: Collector, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """close() prints one line with points sent, batches refused and retries."""
        handler = make(collector)
        handler.log_scalar("loss", 1.0, 0)
        handler.close()
        err = capsys.readouterr().err

        assert "1 points sent, 0 batches refused (0 points), 0 retries" in err

    def test_non_finite_value_sent_as_null(self, collector: Collector) -> None:
        """A NaN value arrives as null rather than breaking the JSON batch."""
        handler = make(collector)
        handler.log_scalar("loss", float("nan"), 0)
        handler.close()

        assert [None] == [p["value"] for p in collector.points(handler.run_id)]

    def test_handle_metric_event(self, collector: Collector) -> None:
        """As a goggles_io handler, each metric of an event becomes a point at its step."""
        handler = make(collector)
        handler.handle(
            gg.Event(kind=gg.Kind.METRIC, scope="global", payload={"a": 1.0, "b": 2.0}, step=3)
        )
        handler.close()

        assert [("a", 1.0, 3), ("b", 2.0, 3)] == [
            (p["name"], p["value"], p["step"]) for p in collector.points(handler.run_id)
        ]

    def test_attached_to_goggles_io_bus(self, collector: Collector) -> None:
        """Attached with gg.attach, logger scalars arrive and gg.finish() sends the finish."""
        handler = make(collector, name="test.remote", buffer_size=4)
        gg.attach(handler)
        logger = gg.get_logger("t", with_metrics=True)
        for step in range(10):
            logger.scalar("loss", float(step), step=step)
        gg.finish()

        assert list(range(10)) == [p["step"] for p in collector.points(handler.run_id)]
        assert "done" == collector.runs()[0]["status"]

    def test_spec_rebuilds_with_key_outside_data(self, collector: Collector) -> None:
        """The key travels under spec['secrets'] (not data); from_dict rebuilds the same target."""
        handler = make(collector)
        spec = handler.to_dict()
        rebuilt = RemoteHandler.from_dict(spec)
        handler.close()
        rebuilt.log_scalar("loss", 1.0, 0)
        rebuilt.close()

        assert "api_key" not in spec["data"] and "api_key" in spec["secrets"]
        assert (handler.run_id, handler.server_url) == (rebuilt.run_id, rebuilt.server_url)
        assert 1 == len(collector.points(handler.run_id))


class TestRegistration:
    def test_register_before_step_zero(self, collector: Collector) -> None:
        """register() makes the run and its config visible before any point."""
        handler = make(collector)
        handler.record_config({"algo": "sac"})
        handler.register()
        wait_until(collector.runs, what="run registered")
        run = collector.runs()[0]
        handler.close()

        assert ("test run", {"algo": "sac"}, 0) == (run["name"], run["config"], run["points"])

    def test_lazy_registration_on_first_flush(self, collector: Collector) -> None:
        """A handler never registered registers itself with its first batch."""
        handler = make(collector, buffer_size=2)
        handler.log_scalar("loss", 1.0, 0)
        handler.log_scalar("loss", 2.0, 1)
        wait_until(lambda: collector.runs() and collector.runs()[0]["points"] == 2)
        handler.close()

    def test_register_run_adopts_run_identity(self, collector: Collector, tmp_path: Path) -> None:
        """register_run(run, handler) registers under the run's id with its config."""
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path / "runs")
        run.set_config("algo", "ppo")
        handler = make(collector)
        register_run(run, handler)
        wait_until(collector.runs, what="run registered")
        run.set_config("lr", 0.5)
        handler.close()
        run.close()
        registered = collector.runs()[0]

        assert (run.id, {"algo": "ppo", "lr": 0.5}) == (registered["run_id"], registered["config"])

    def test_heartbeat_when_quiet(self, collector: Collector) -> None:
        """A registered run that stays quiet sends heartbeats."""
        handler = make(collector, heartbeat_s=0.05)
        handler.register()
        wait_until(lambda: collector.runs() and collector.runs()[0]["heartbeats"] >= 2)
        handler.close()


class TestOutage:
    def test_collector_down_never_blocks_and_counts_refusals(self, collector: Collector) -> None:
        """when_full='drop', collector down: log calls stay far below the HTTP timeout, refusals
        are counted, and points logged after it comes back arrive."""
        timeout_s = (
            30.0  # the collector drops its connections on shutdown: no request waits this out
        )
        handler = make(
            collector, buffer_size=5, queue_batches=3, timeout_s=timeout_s, when_full="drop"
        )
        for step in range(10):
            handler.log_scalar("loss", 1.0, step)
        wait_until(lambda: len(collector.points(handler.run_id)) == 10, what="first batches")
        collector.shutdown()
        longest = 0.0
        for step in range(10, 210):
            started = time.perf_counter()
            handler.log_scalar("loss", 1.0, step)
            longest = max(longest, time.perf_counter() - started)
        refused = handler.stats()["refused_batches"]
        collector.start()
        wait_until(lambda: handler.stats()["queued"] == 0, what="queue drained")
        for step in range(210, 220):
            handler.log_scalar("loss", 2.0, step)
        handler.close()
        stats = handler.stats()
        got = collector.points(handler.run_id)

        assert longest < timeout_s / 10
        assert refused >= 30
        assert stats["refused_points"] + len(got) == 220
        assert stats["points_sent"] == len(got)
        assert list(range(211, 221)) == [p["seq"] for p in got][-10:]
        assert sorted({p["seq"] for p in got}) == [p["seq"] for p in got]

    def test_slow_collector_does_not_stall_producer(self, collector: Collector) -> None:
        """With responses held back 20 s, every log call returns long before one response would."""
        delay_s = 20.0  # released early below: lowering the delay frees waiting requests
        collector.response_delay_s = delay_s
        handler = make(collector, buffer_size=5, queue_batches=4, timeout_s=3 * delay_s)
        handler.register()
        wait_until(lambda: collector.requests_received >= 1, what="registration in flight")
        longest = 0.0
        for step in range(60):
            started = time.perf_counter()
            handler.log_scalar("loss", 1.0, step)
            longest = max(longest, time.perf_counter() - started)
        collector.response_delay_s = 0.0
        handler.close()

        assert longest < delay_s / 4  # waiting on any response would take the whole delay
        assert handler.stats()["points_sent"] == len(collector.points(handler.run_id))


class TestAuth:
    def test_wrong_key_reported_once(
        self, collector: Collector, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A wrong API key gives one clear error, nothing is stored, every point is counted."""
        caplog.set_level(logging.WARNING, logger="goggles_io")
        handler = make(collector, api_key="wrong-key-123", buffer_size=5)
        for step in range(30):
            handler.log_scalar("loss", 1.0, step)
        handler.close()
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]

        assert 1 == len(errors)
        assert "API key" in errors[0].getMessage()
        assert [] == collector.runs()
        assert 30 == handler.stats()["rejected_points"]

    def test_sender_parks_after_auth_failure(self, collector: Collector) -> None:
        """Once the key is rejected the sender thread waits idle instead of spinning on heartbeats."""
        before = set(threading.enumerate())
        handler = make(collector, api_key="wrong-key-123", buffer_size=5, heartbeat_s=1e-6)
        for step in range(5):
            handler.log_scalar("loss", 1.0, step)
        wait_until(lambda: 5 == handler.stats()["rejected_points"], what="batch rejected")
        (sender,) = [t for t in set(threading.enumerate()) - before if "remote" in t.name]

        def parked() -> bool:
            frame = sys._current_frames().get(sender.ident or -1)
            return frame is not None and "wait" == frame.f_code.co_name

        wait_until(parked, what="sender thread parked in Condition.wait")
        handler.close()

    def test_key_never_in_repr_spec_logs_or_run_kv(
        self,
        collector: Collector,
        caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str],
        tmp_path: Path,
    ) -> None:
        """The API key appears in neither repr, handler spec, log records, stderr nor run.kv."""
        caplog.set_level(logging.DEBUG)
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path / "runs")
        handler = make(collector, api_key="wrong-key-123")
        register_run(run, handler)
        handler.log_scalar("loss", 1.0, 0)
        text = repr(handler) + str(handler.to_dict())
        handler.close()
        run.close()
        text += caplog.text + capsys.readouterr().err + (run.dir / "run.kv").read_text()

        assert "wrong-key-123" not in text
        assert "api_key" not in read_kv(run.dir / "run.kv")


class TestSpecContext:
    def test_dotenv_values_resolved_into_the_spec(
        self, collector: Collector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """URL and key found in .env here are carried; a rebuild elsewhere reads no .env."""
        (tmp_path / ".env").write_text(
            f"TELEMETRY_REMOTE_URL={collector.url}\nTELEMETRY_REMOTE_API_KEY={KEY}\n"
        )
        spec = RemoteHandler(run_name="r").to_dict()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / ".env").write_text("TELEMETRY_REMOTE_URL=http://127.0.0.1:9\n")
        monkeypatch.chdir(elsewhere)
        rebuilt = RemoteHandler.from_dict(spec)

        assert (collector.url, False) == (spec["data"]["server_url"], spec["data"]["read_env"])
        assert (collector.url, KEY) == (rebuilt.server_url, rebuilt.secrets()["api_key"].reveal())

    def test_silenced_run_stays_silent_when_rebuilt(
        self, collector: Collector, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """TELEMETRY_NO_REMOTE here silences the rebuilt copy even where the variable is unset."""
        monkeypatch.setenv("TELEMETRY_NO_REMOTE", "1")
        spec = make(collector).to_dict()
        monkeypatch.delenv("TELEMETRY_NO_REMOTE")

        assert RemoteHandler.from_dict(spec).inert

    def test_registered_config_and_identity_carried(
        self, collector: Collector, tmp_path: Path
    ) -> None:
        """A copy rebuilt after register_run/record_config registers at open() with both."""
        run = RunContext(project="p", driver="d", slug="s", root=tmp_path / "runs")
        handler = make(collector)
        handler.record_config({"lr": 0.1})
        handler.register_run(run.info())
        handler.close()
        rebuilt = RemoteHandler.from_dict(handler.to_dict())
        rebuilt.open()
        rebuilt.record_config({"batch": 8})
        rebuilt.close()
        run.close()

        assert (run.id, "test run") == (rebuilt.run_id, rebuilt.run_name)
        assert {"lr": 0.1, "batch": 8} == collector.runs()[0]["config"]


class TestConfiguration:
    def test_no_url_is_inert_and_says_so_once(self, caplog: pytest.LogCaptureFixture) -> None:
        """Without a URL anywhere the handler is inert, warns once, and logging is a no-op."""
        caplog.set_level(logging.WARNING, logger="goggles_io")
        handler = RemoteHandler(run_name="x")
        handler.log_scalar("loss", 1.0, 0)
        handler.flush()
        handler.close()

        assert handler.inert
        assert 1 == len([r for r in caplog.records if "inert" in r.getMessage()])

    def test_url_and_key_from_dotenv(self, collector: Collector, tmp_path: Path) -> None:
        """URL and key come from a .env in a parent directory, without touching os.environ."""
        (tmp_path / ".env").write_text(
            f"TELEMETRY_REMOTE_URL={collector.url}\nTELEMETRY_REMOTE_API_KEY={KEY}\n"
        )
        (tmp_path / "sub").mkdir()
        os.chdir(tmp_path / "sub")
        handler = RemoteHandler(run_name="from dotenv")
        handler.log_scalar("loss", 1.0, 0)
        handler.close()

        assert 1 == len(collector.points(handler.run_id))
        assert "TELEMETRY_REMOTE_URL" not in os.environ

    def test_no_remote_env_silences_run(
        self, collector: Collector, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """TELEMETRY_NO_REMOTE=1 silences a run even with a URL given."""
        monkeypatch.setenv("TELEMETRY_NO_REMOTE", "1")

        assert make(collector).inert

    def test_enabled_false_silences_run(self, collector: Collector) -> None:
        """enabled=False silences a run even with a URL given."""
        assert make(collector, enabled=False).inert

    @pytest.mark.parametrize(
        ("kwargs", "param"),
        [
            ({"buffer_size": 0}, "buffer_size"),
            ({"queue_batches": -1}, "queue_batches"),
            ({"heartbeat_s": 0}, "heartbeat_s"),
            ({"server_url": "ftp://host"}, "server_url"),
            ({"config": [("lr", 1)]}, "config"),
            ({"run_info": "run-1"}, "run_info"),
        ],
    )
    def test_bad_arguments_rejected(self, kwargs: dict[str, object], param: str) -> None:
        """Malformed constructor arguments raise naming the parameter."""
        kwargs.setdefault("server_url", "http://127.0.0.1:9")
        with pytest.raises(ConfigurationError, match=param):
            RemoteHandler(**kwargs)  # type: ignore[arg-type]

    def test_non_numeric_value_rejected(self, collector: Collector) -> None:
        """A value that is not a number raises at the call site naming the metric."""
        handler = make(collector)
        with pytest.raises(InvalidPayloadError, match="'loss'"):
            handler.log_scalar("loss", "high")
        handler.close()

    def test_empty_name_rejected(self, collector: Collector) -> None:
        """An empty metric name raises at the call site."""
        handler = make(collector)
        with pytest.raises(InvalidNameError):
            handler.log_scalar("", 1.0)
        handler.close()
