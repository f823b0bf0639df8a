"""RemoteHandler never stalls on one point, splits what is too big, and reports every loss."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io.exceptions import InvalidNameError, InvalidPayloadError
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.server import Collector, ProtocolError, RunStore
from support import wait_until


@pytest.fixture(autouse=True)
def _no_remote_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("TELEMETRY_REMOTE_URL", "TELEMETRY_REMOTE_API_KEY", "TELEMETRY_NO_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    with Collector(db_path=str(tmp_path / "c.sqlite")) as running:
        yield running


class _PickyStore(RunStore):
    """The real store, plus one storage rule the handler does not know: no "bad*" names."""

    def add_points(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        invalid = [
            {"index": i, "seq": p.get("seq"), "error": "names starting with 'bad' are refused"}
            for i, p in enumerate(body.get("points", []))
            if str(p.get("name", "")).startswith("bad")
        ]
        if invalid:
            raise ProtocolError(HTTPStatus.UNPROCESSABLE_ENTITY, "refused", invalid=invalid)
        return super().add_points(run_id, body)


def make(collector: Collector, **kwargs: Any) -> RemoteHandler:
    return RemoteHandler(server_url=collector.url, **kwargs)


class TestValidationAtTheCall:
    @pytest.mark.parametrize("step", [2**70, -(2**64), math.nan, math.inf, 1.5, "3"])
    def test_step_the_protocol_cannot_carry_raises(self, collector: Collector, step: Any) -> None:
        """A step that is not a 64-bit whole number is refused at the log call."""
        handler = make(collector)
        with pytest.raises(InvalidPayloadError, match="step"):
            handler.log_scalar("loss", 1.0, step)
        handler.close()

    def test_lone_surrogate_name_raises(self, collector: Collector) -> None:
        """A name that is not valid UTF-8 is refused at the log call."""
        handler = make(collector)
        with pytest.raises(InvalidNameError, match="UTF-8"):
            handler.log_scalar("loss\ud800", 1.0, 1)
        handler.close()

    def test_whole_float_step_accepted(self, collector: Collector) -> None:
        """A float step with no fraction is sent as an int."""
        handler = make(collector)
        handler.log_scalar("loss", 1.0, 3.0)
        handler.close()

        assert [3] == [p["step"] for p in collector.points(handler.run_id)]

    def test_event_with_one_bad_metric_sends_the_others(self, collector: Collector) -> None:
        """Through handle(), an unsendable metric is skipped and counted; its siblings go out."""
        handler = make(collector)
        event = Event(kind=Kind.METRIC, scope="global", payload={"ok": 1.0, "x\ud800": 2.0}, step=1)
        handler.handle(event)
        handler.close()

        assert ["ok"] == [p["name"] for p in collector.points(handler.run_id)]
        assert {"invalid": 1} == handler.losses()


class TestNeverStalls:
    def test_point_the_collector_refuses_is_dropped_and_the_rest_stored(
        self, tmp_path: Path
    ) -> None:
        """A 422 naming one point drops exactly it (counted); the next 1,000 points are stored."""
        with Collector(store=_PickyStore(str(tmp_path / "p.sqlite"))) as picky:
            handler = make(picky, buffer_size=50)
            handler.log_scalar("bad", 1.0, 0)
            for step in range(1, 1001):
                handler.log_scalar("loss", float(step), step)
            handler.close()

            stored = picky.points(handler.run_id)
            assert 1000 == len(stored) and {"loss"} == {p["name"] for p in stored}
            assert {"rejected": 1} == handler.losses()
            assert 0 == handler.stats()["retries"]

    def test_batch_over_max_body_bytes_is_split(self, collector: Collector) -> None:
        """A batch bigger than max_body_bytes is sent in halves; every point stored once."""
        handler = make(collector, buffer_size=2000, max_body_bytes=20_000)
        for step in range(2000):
            handler.log_scalar("loss", float(step), step)
        handler.close()

        assert list(range(1, 2001)) == [p["seq"] for p in collector.points(handler.run_id)]
        assert handler.stats()["split_requests"] > 0 and {} == handler.losses()

    def test_413_from_a_stricter_collector_splits(self, tmp_path: Path) -> None:
        """A collector with a smaller body limit answers 413; the sender splits and stores all."""
        with Collector(db_path=str(tmp_path / "s.sqlite"), max_body_bytes=10_000) as strict:
            handler = make(strict, buffer_size=1000)
            for step in range(1000):
                handler.log_scalar("loss", float(step), step)
            handler.close()

            assert 1000 == len(strict.points(handler.run_id))
            assert {} == handler.losses() and 0 == handler.stats()["retries"]

    def test_idle_connection_closed_by_server_is_reopened_without_retry(
        self, tmp_path: Path
    ) -> None:
        """After the collector drops an idle keep-alive connection, the next batch still goes out at once."""
        with Collector(db_path=str(tmp_path / "i.sqlite"), read_timeout_s=0.2) as quick:
            handler = make(quick, buffer_size=1)
            handler.log_scalar("loss", 1.0, 1)
            wait_until(lambda: len(quick.points(handler.run_id)) == 1, what="first point")
            wait_until(lambda: not quick.connections, what="idle connection closed by the server")
            handler.log_scalar("loss", 2.0, 2)
            handler.close()

            assert 2 == len(quick.points(handler.run_id))
            assert 0 == handler.stats()["retries"]


class TestLossesInFinishReport:
    """In-process bus (GOGGLES_TRANSPORT=inprocess, set by conftest): the handler's own tally."""

    def test_refusals_are_in_the_finish_report(self, collector: Collector) -> None:
        """Points refused by a full queue (when_full='drop') are counted by finish() too."""
        collector.response_delay_s = 0.5
        handler = make(
            collector, name="t.remote", buffer_size=10, queue_batches=1, when_full="drop"
        )
        gg.attach(handler)
        logger = gg.get_logger("t", with_metrics=True)
        for step in range(2000):
            logger.scalar("loss", float(step), step=step)
        collector.response_delay_s = 0.0
        report = gg.finish(60.0)

        refused = report.handlers["t.remote"].losses.get("refused", 0)
        assert refused > 0 and report.lost >= refused
        assert f"{refused} refused" in report.summary()
        assert 2000 == len(collector.points(handler.run_id)) + refused

    def test_finish_timeout_reports_what_was_not_sent(
        self, collector: Collector, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """When finish() times out on a slow collector, the report counts the points still unsent."""
        collector.response_delay_s = 2.0
        handler = make(collector, name="t.slow", buffer_size=100, close_timeout_s=30.0)
        gg.attach(handler)
        logger = gg.get_logger("t", with_metrics=True)
        for step in range(2000):
            logger.scalar("loss", float(step), step=step)
        started = time.monotonic()
        report = gg.finish(0.5)
        assert time.monotonic() - started < 10

        stats = report.handlers["t.slow"]
        assert report.timed_out and stats.losses.get("unsent", 0) > 0
        assert "unsent" in capsys.readouterr().err
        collector.response_delay_s = 0.0
        wait_until(lambda: len(collector.points(handler.run_id)) == 2000, what="drained later")


class TestFileAndWandBLosses:
    def test_wandb_row_refused_by_run_log_is_counted(self, tmp_path: Path) -> None:
        """A row W&B refuses is dropped and counted in losses(), the next rows still logged."""
        pytest.importorskip("wandb")
        from goggles_io.handlers.wandb import WandBHandler
        from wandb_reader import read_offline_runs

        handler = WandBHandler(project="p", mode="offline", dir=str(tmp_path))
        handler.handle(Event(kind=Kind.METRIC, scope="global", payload={"loss": 1.0}, step=0))
        handler.flush()  # rows go to W&B at flush (ADR 0070): this one is logged
        state = handler._runs["global"]
        real_log = state.run.log
        state.run.log = None  # the W&B run itself fails (e.g. its service died): log is unusable
        handler.handle(Event(kind=Kind.METRIC, scope="global", payload={"loss": 2.0}, step=1))
        handler.handle(Event(kind=Kind.METRIC, scope="global", payload={"loss": 3.0}, step=2))
        handler.flush()  # while log is broken: both rows refused
        state.run.log = real_log
        handler.handle(Event(kind=Kind.METRIC, scope="global", payload={"loss": 4.0}, step=3))
        handler.close()

        assert {"log_failed": 2} == handler.losses()
        (run,) = read_offline_runs(tmp_path).values()
        assert [(0, 1.0), (3, 4.0)] == [(row["step"], row["loss"]) for row in run["history"]]
